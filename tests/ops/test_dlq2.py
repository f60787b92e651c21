"""`ops dlq2 list` and `ops dlq2 replay`: look at DLQ 2 without consuming it, and move its
messages back to DLQ 1, where the redrive applies them."""

from __future__ import annotations

from typing import Any

import pytest

from ops import commands
from ops.stack import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK
from tests.handler.conftest import Harness
from tests.ops.conftest import Cli, Queues
from tests.support.failure_messages import on_failure_message
from tests.support.lambda_context import FakeLambdaContext

STREAM = "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-11-22T00:00:00.000"
GARBAGE = "this is not an on-failure record"


def failure(start: int, end: int, shard: str = "shardId-0001") -> str:
    return on_failure_message(STREAM, shard, str(start), str(end), end - start + 1)


def test_list_parses_each_message_and_consumes_none(queues: Queues) -> None:
    valid_id, garbage_id = queues.send(queues.dlq2, failure(100, 104), GARBAGE)

    listing = commands.list_dlq2(queues.sqs, queues.dlq2)
    by_id = {message.message_id: message for message in listing.messages}
    assert set(by_id) == {valid_id, garbage_id}
    valid = by_id[valid_id]
    assert valid.batch is not None
    assert (valid.batch.shard_id, valid.batch.start_sequence_number, valid.batch.end_sequence_number) == (
        "shardId-0001",
        "100",
        "104",
    )
    assert valid.batch.batch_size == 5
    assert valid.receive_count == 1
    assert valid.sent_at.endswith("Z")
    garbage = by_id[garbage_id]
    assert garbage.batch is None
    assert garbage.parse_error is not None
    assert "not a DynamoDB stream on-failure message" in garbage.parse_error
    assert garbage.body == GARBAGE

    assert queues.visible(queues.dlq2) == 2  # visible again at once, nothing deleted
    assert {message.message_id for message in commands.list_dlq2(queues.sqs, queues.dlq2).messages} == {
        valid_id,
        garbage_id,
    }


def test_list_pages_past_one_receive_and_stops_at_max(queues: Queues) -> None:
    sent = queues.send(queues.dlq2, *(failure(index * 10, index * 10 + 9) for index in range(13)))
    assert {message.message_id for message in commands.list_dlq2(queues.sqs, queues.dlq2).messages} == set(sent)
    assert len(commands.list_dlq2(queues.sqs, queues.dlq2, max_messages=4).messages) == 4
    assert queues.visible(queues.dlq2) == 13


def test_replay_all_sends_each_exact_body_to_dlq1_and_empties_dlq2(queues: Queues) -> None:
    bodies = [failure(index * 10, index * 10 + 9) for index in range(12)]
    sent = queues.send(queues.dlq2, *bodies)

    report = commands.replay_dlq2(queues.sqs, queues.dlq2, queues.dlq1)
    assert set(report.moved) == set(sent)
    assert (report.skipped, report.failed, report.not_found, report.exit_code) == ({}, {}, [], EXIT_OK)
    received = queues.drain(queues.dlq1)
    assert sorted(message["Body"] for message in received) == sorted(bodies)
    assert {message["MessageId"] for message in received} == set(report.moved.values())
    assert queues.drain(queues.dlq2) == []


def test_replay_by_id_moves_only_those(queues: Queues) -> None:
    first, second, third = queues.send(queues.dlq2, failure(1, 2), failure(3, 4), failure(5, 6))

    report = commands.replay_dlq2(queues.sqs, queues.dlq2, queues.dlq1, [second, "no-such-message"])
    assert list(report.moved) == [second]
    assert report.not_found == ["no-such-message"]
    assert report.exit_code == EXIT_NOT_FOUND
    assert [message["Body"] for message in queues.drain(queues.dlq1)] == [failure(3, 4)]
    assert queues.visible(queues.dlq2) == 2  # the others were released at once, not held
    assert {message["MessageId"] for message in queues.drain(queues.dlq2)} == {first, third}


def test_replay_skips_unparseable_bodies_unless_asked(queues: Queues) -> None:
    valid_id, garbage_id = queues.send(queues.dlq2, failure(1, 2), GARBAGE)

    report = commands.replay_dlq2(queues.sqs, queues.dlq2, queues.dlq1)
    assert list(report.moved) == [valid_id]
    assert list(report.skipped) == [garbage_id]
    assert report.exit_code == EXIT_OK  # --all: skipping is reported, not an error
    assert [message["MessageId"] for message in queues.drain(queues.dlq2)] == [garbage_id]

    queues.send(queues.dlq2, GARBAGE)
    forced = commands.replay_dlq2(queues.sqs, queues.dlq2, queues.dlq1, include_unparseable=True)
    assert len(forced.moved) == 1
    assert GARBAGE in [message["Body"] for message in queues.drain(queues.dlq1)]


def test_a_replayed_message_is_applied_by_the_redrive(cli_harness: Harness, queues: Queues) -> None:
    """The whole path: a range that ended in DLQ 2 goes to DLQ 1, and the redrive handler counts it."""
    from functions.redrive.handler import handler as redrive_handler

    cli_harness.api.put_account("acme", 5)
    for index in range(2):
        cli_harness.api.create("acme", f"r{index}")
    records = cli_harness.tap.drain()  # never delivered: the batch "exhausted its retries"
    stream = cli_harness.backend.streams.describe_stream(StreamArn=cli_harness.backend.stream_arn)["StreamDescription"]
    shard_id = stream["Shards"][0]["ShardId"]
    body = on_failure_message(
        cli_harness.backend.stream_arn,
        shard_id,
        records[0]["dynamodb"]["SequenceNumber"],
        records[-1]["dynamodb"]["SequenceNumber"],
        len(records),
    )
    queues.send(queues.dlq2, body)
    assert cli_harness.api.account("acme")["eventual"] == 0

    assert len(commands.replay_dlq2(queues.sqs, queues.dlq2, queues.dlq1).moved) == 1
    (message,) = queues.drain(queues.dlq1)
    event: dict[str, Any] = {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": message.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": message["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:dlq1",
                "awsRegion": "us-east-1",
            }
        ]
    }
    assert (
        redrive_handler(event, FakeLambdaContext(function_name="redrive"), wiring=cli_harness.wiring)[
            "batchItemFailures"
        ]
        == []
    )
    assert cli_harness.api.account("acme")["eventual"] == 2
    cli_harness.check_invariants()


def test_the_cli_lists_and_replays(queues: Queues, cli: Cli) -> None:
    valid_id, garbage_id = queues.send(queues.dlq2, failure(100, 104), GARBAGE)

    listed = cli("dlq2", "list")
    assert listed.code == EXIT_OK, listed.err
    assert f"{valid_id}  receives 1" in listed.out
    assert "shard shardId-0001  sequence 100..104  batch size 5" in listed.out
    assert "unparseable (not a DynamoDB stream on-failure message" in listed.out
    assert len(cli("dlq2", "list", "--json").json()["messages"]) == 2

    by_name = cli("dlq2", "replay", garbage_id)
    assert by_name.code == EXIT_ERROR  # named, but skipped: not what was asked
    assert "skipped 1" in by_name.out

    replayed = cli("dlq2", "replay", "--all")
    assert replayed.code == EXIT_OK, replayed.err
    assert replayed.out.splitlines()[0].startswith("moved 1 message(s) from DLQ 2 to DLQ 1")
    assert [message["Body"] for message in queues.drain(queues.dlq1)] == [failure(100, 104)]
    assert [message["MessageId"] for message in queues.drain(queues.dlq2)] == [garbage_id]


def test_replay_needs_a_selection(cli: Cli) -> None:
    with pytest.raises(SystemExit) as usage:  # argparse: bad usage
        cli("dlq2", "replay")
    assert usage.value.code == 2
