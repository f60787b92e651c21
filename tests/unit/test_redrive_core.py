"""Parsing Lambda's on-failure record and choosing between the stream and the sweep."""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.adapters.attributes import to_attributes
from functions.adapters.failure_messages import InvalidFailureMessage, parse_failure_message
from functions.adapters.resource_records import pending_record
from functions.core.counting import COMMITTED, CancellationReason, ItemRecord, Outcome, TransactionResult
from functions.core.redrive import (
    RedriveIncomplete,
    StreamBatchInfo,
    StreamRecordsGone,
    redrive,
)
from tests.support.failure_messages import on_failure_message
from tests.unit.test_counting import ScriptedStore, insert

STREAM_ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-11-22T00:00:00.000"


def aws_message(**overrides: Any) -> str:
    return on_failure_message(STREAM_ARN, "shardId-00000001700000000000-abcdef12", "100", "102", 3, **overrides)


def test_parses_the_aws_on_failure_record() -> None:
    assert parse_failure_message(aws_message()) == StreamBatchInfo(
        STREAM_ARN, "shardId-00000001700000000000-abcdef12", "100", "102", 3
    )


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps({"Records": []}),
        aws_message(startSequenceNumber="abc"),
        aws_message(streamArn=""),
        aws_message(startSequenceNumber="200", endSequenceNumber="100"),
        aws_message(shardId=None),
    ],
)
def test_rejects_anything_else(body: str) -> None:
    with pytest.raises(InvalidFailureMessage):
        parse_failure_message(body)


class Reader:
    def __init__(self, records: list[ItemRecord] | None) -> None:
        self.records = records

    def read_range(self, batch: StreamBatchInfo) -> list[ItemRecord]:
        if self.records is None:
            raise StreamRecordsGone("trimmed")
        return self.records


class Pending:
    def __init__(self, items: list[ItemRecord]) -> None:
        self.items = items

    def pending_records(self, older_than: str | None) -> list[ItemRecord]:
        return self.items


BATCH = parse_failure_message(aws_message())
PENDING_ITEM = pending_record(
    to_attributes({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r9", "counter_processed": False, "deleted": False})
)


def test_replays_the_range_from_the_stream() -> None:
    store = ScriptedStore(count_results=[COMMITTED])
    result = redrive(BATCH, reader=Reader([insert("r1", "100")]), counting=store, pending=Pending([]))
    assert result.source == "stream"
    assert result.report.outcomes[Outcome.APPLIED] == 1


def test_falls_back_to_the_sweep_when_records_are_gone() -> None:
    store = ScriptedStore(count_results=[COMMITTED])
    result = redrive(BATCH, reader=Reader(None), counting=store, pending=Pending([PENDING_ITEM]))
    assert result.source == "sweep"
    assert store.calls == ["count_create"]


CONFLICT = TransactionResult((CancellationReason("TransactionConflict"), CancellationReason("None")))


def test_a_record_of_the_range_that_keeps_failing_fails_the_message() -> None:
    store = ScriptedStore(count_results=[CONFLICT, CONFLICT, CONFLICT])
    with pytest.raises(RedriveIncomplete):
        redrive(BATCH, reader=Reader([insert("r1", "100")]), counting=store, pending=Pending([]))


def test_a_sweep_leaves_what_still_fails_to_the_scheduled_sweeper() -> None:
    store = ScriptedStore(count_results=[CONFLICT])
    result = redrive(BATCH, reader=Reader(None), counting=store, pending=Pending([PENDING_ITEM]))
    assert result.source == "sweep"
    assert result.report.failed == ["ACCOUNT#a1/RESOURCE#r9"]  # still pending, reported, not lost


def test_records_that_fail_once_are_retried_within_the_invocation() -> None:
    store = ScriptedStore(count_results=[CONFLICT, COMMITTED])
    result = redrive(BATCH, reader=Reader([insert("r1", "100")]), counting=store, pending=Pending([]))
    assert result.report.outcomes[Outcome.APPLIED] == 1
    assert store.calls == ["count_create", "count_create"]
