"""The redrive Lambda against a real stream in the emulator (moto in-process cannot describe streams)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from tests.handler.conftest import Harness
from tests.support.failure_messages import on_failure_message
from tests.support.faults import Faults
from tests.support.lambda_context import FakeLambdaContext


def sqs_event(*bodies: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m{index}",
                "receiptHandle": f"h{index}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1795300000000"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:dlq1",
                "awsRegion": "us-east-1",
            }
            for index, body in enumerate(bodies)
        ]
    }


def redrive(harness: Harness, *bodies: str) -> list[str]:
    from functions.redrive.handler import handler

    response = handler(sqs_event(*bodies), FakeLambdaContext(function_name="redrive"), wiring=harness.wiring)
    return [failure["itemIdentifier"] for failure in response["batchItemFailures"]]


def shard_of(harness: Harness) -> str:
    shards = harness.backend.streams.describe_stream(StreamArn=harness.backend.stream_arn)["StreamDescription"][
        "Shards"
    ]
    assert len(shards) == 1
    return str(shards[0]["ShardId"])


def exhausted(harness: Harness, records: list[dict[str, Any]]) -> str:
    """The on-failure message of a batch of these records that exhausted its retries."""
    return on_failure_message(
        harness.backend.stream_arn,
        shard_of(harness),
        records[0]["dynamodb"]["SequenceNumber"],
        records[-1]["dynamodb"]["SequenceNumber"],
        len(records),
    )


def records_gone(faults: Faults, code: str = "TrimmedDataAccessException") -> None:
    """The stream answers every GetShardIterator as it does once the range cannot be read."""
    faults.answer_instead(
        "GetShardIterator", lambda _: True, {"__type": code, "message": "gone"}, service="dynamodb-streams", times=99
    )


@pytest.fixture
def failed_range(harness: Harness) -> str:
    """Three creates whose stream batch 'exhausted its retries': only its metadata survives."""
    harness.api.put_account("acme", 10)
    for index in range(3):
        harness.api.create("acme", f"r{index}")
    return exhausted(harness, harness.tap.drain())


def test_redrive_rereads_the_range_and_counts_each_record_once(harness: Harness, failed_range: str) -> None:
    assert redrive(harness, failed_range) == []
    assert harness.api.account("acme")["eventual"] == 3
    assert redrive(harness, failed_range, failed_range) == []  # replayed again, twice in one batch
    assert harness.api.account("acme")["eventual"] == 3
    harness.check_invariants()


def test_redrive_logs_and_counts_each_range(
    harness: Harness, failed_range: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    from functions.shared.observability import logger

    caplog.set_level(logging.INFO, logger=logger.name)  # as deployed: the tests log at WARNING
    capsys.readouterr()
    assert redrive(harness, failed_range) == []
    message = json.loads(failed_range)["DDBStreamBatchInfo"]
    (logged,) = [line for line in caplog.records if line.getMessage() == "range redriven"]
    assert logged.funcName == "redrive_message"
    assert (logged.source, logged.shard, logged.start, logged.end) == (  # type: ignore[attr-defined]
        "stream",
        message["shardId"],
        message["startSequenceNumber"],
        message["endSequenceNumber"],
    )
    assert logged.outcomes["applied"] == 3  # type: ignore[attr-defined]
    assert sum(logged.outcomes.values()) == message["batchSize"]  # type: ignore[attr-defined]
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [metric["RedrivenStream"] for metric in metrics] == [[1]]


def test_redrive_reads_only_the_failed_range(harness: Harness, failed_range: str) -> None:
    harness.api.create("acme", "later")  # after the failed range: not the redrive's to apply
    assert redrive(harness, failed_range) == []
    assert harness.api.account("acme")["eventual"] == 3


# AWS's answers when the range cannot be read any more: trimmed after 24 h, iterator past its
# 15 minutes, shard or stream gone. (moto answers an unknown shard with a 500 of its own, so the
# documented answer is injected on the wire instead.)
@pytest.mark.parametrize(
    "code", ["TrimmedDataAccessException", "ExpiredIteratorException", "ResourceNotFoundException"]
)
def test_when_the_records_are_gone_the_sweep_counts_them(
    harness: Harness, failed_range: str, code: str, faults: Faults
) -> None:
    records_gone(faults, code)
    assert redrive(harness, failed_range) == []
    assert harness.api.account("acme")["eventual"] == 3
    harness.check_invariants()


def test_the_sweep_also_finishes_pending_deletes(harness: Harness, failed_range: str, faults: Faults) -> None:
    assert redrive(harness, failed_range) == []
    page = harness.api.request("GET", "/accounts/acme/resources").json()
    harness.api.delete("acme", page["items"][0]["resourceId"])
    records_gone(faults)
    assert redrive(harness, failed_range) == []
    truth = harness.truth("acme")
    assert (truth.eventual, truth.live, truth.existing) == (2, 2, 2)


def test_a_message_that_is_not_an_on_failure_record_stays_failed(harness: Harness) -> None:
    assert redrive(harness, "{}", "not json") == ["m0", "m1"]


def test_a_range_whose_work_keeps_failing_stays_failed(harness: Harness, failed_range: str, faults: Faults) -> None:
    faults.answer_instead(
        "TransactWriteItems", lambda _: True, faults.transaction_cancelled("None", "TransactionConflict"), times=99
    )
    assert redrive(harness, failed_range) == ["m0"]  # left on DLQ 1: SQS moves it to DLQ 2 after maxReceiveCount
    assert harness.api.account("acme")["eventual"] == 0


def test_a_limit_change_whose_records_are_gone_is_still_decided(harness: Harness, faults: Faults) -> None:
    """A lowered limit's batch exhausted its retries and the stream trimmed it before the redrive
    read it: the crossings the change makes are decided anyway, not left to the next count that
    leaves the old limit's headroom (which may never come)."""
    from tests.handler.test_usage_thresholds import create, crossings

    harness.api.put_account("acme", 5)
    create(harness, 4)  # 80%: announced
    harness.pump()
    assert crossings(harness) == [(80, "up", 4)]
    harness.api.put_account("acme", 3)  # 133%: crosses 100 up
    message = exhausted(harness, harness.tap.drain())
    records_gone(faults)
    assert redrive(harness, message) == []
    harness.pump()
    assert crossings(harness) == [(80, "up", 4), (100, "up", 4)]
