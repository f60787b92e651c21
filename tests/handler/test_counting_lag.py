"""What the consumer publishes: its counting lag (created -> counted), the dashboard's p95
(infra/monitoring.py), and each batch's outcomes, as metrics and a log line."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from functions.adapters.resource_records import stream_records
from functions.core.counting import (
    COMMITTED,
    CancellationReason,
    ResourceAction,
    TransactionResult,
    process_records,
)
from tests.handler.conftest import Harness

NOW = datetime(2026, 11, 23, 12, 0, 10, tzinfo=UTC)


class ScriptedStore:
    """Answers each transaction with the next of `results`."""

    def __init__(self, *results: TransactionResult) -> None:
        self.results = list(results)

    def apply_actions(self, account_id: str, actions: Sequence[ResourceAction]) -> TransactionResult:
        return self.results.pop(0)


def record(seq: str, created: datetime, processed: bool = False, deleted: bool = False) -> DynamoDBRecord:
    image = {
        "created_at": {"S": created.isoformat(timespec="milliseconds").replace("+00:00", "Z")},
        "counter_processed": {"BOOL": processed},
        "deleted": {"BOOL": deleted},
    }
    return DynamoDBRecord(
        {
            "eventName": "INSERT",
            "dynamodb": {
                "SequenceNumber": seq,
                "Keys": {"pk": {"S": "ACCOUNT#a"}, "sk": {"S": f"RESOURCE#r{seq}"}},
                "NewImage": image,
            },
        }
    )


def test_the_lag_of_each_create_counted_and_only_those(harness: Harness) -> None:
    from functions.stream_consumer.handler import counting_lags_ms

    records = [
        record("1", NOW - timedelta(milliseconds=1500)),
        record("2", NOW - timedelta(seconds=3)),  # failed: not counted yet
        record("3", NOW - timedelta(seconds=9), processed=True, deleted=True),  # a delete, not a create
    ]
    # One transaction for the three: r2 conflicts, the others are sent again and commit.
    conflict = (CancellationReason("None"), CancellationReason("TransactionConflict"), CancellationReason("None"))
    store = ScriptedStore(TransactionResult(conflict), COMMITTED)
    report = process_records(store, stream_records(records))
    assert report.failed == ["2"]
    assert counting_lags_ms(report.creates_done, NOW) == [1500.0]


def test_a_real_batch_publishes_its_lag(harness: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    """The lag runs from the resource's creation to the consumer's clock (both the wiring's clock)."""
    harness.clock.set(NOW)
    harness.api.put_account("acme", 5)
    harness.api.create("acme")
    capsys.readouterr()
    harness.clock.advance(timedelta(seconds=7))
    harness.pump()
    # The EMF blobs Powertools prints for CloudWatch, one JSON object a line.
    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"CountingLag"' in line]
    [lag] = [value for blob in blobs for value in blob["CountingLag"]]
    assert 7000 <= lag < 67_000


def test_a_batch_logs_and_counts_its_outcomes(
    harness: Harness, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    from functions.shared.observability import logger

    caplog.set_level(logging.INFO, logger=logger.name)  # as deployed: the tests log at WARNING
    harness.api.put_account("acme", 5)
    harness.api.create("acme")
    records = harness.tap.drain()  # the account's records too: not the consumer's to count
    capsys.readouterr()
    assert harness.deliver(records) == []
    expected = {"applied": 1, "skipped": len(records) - 1}
    logged = [line for line in caplog.records if line.getMessage() == "batch applied"]
    assert [(line.funcName, line.records, line.outcomes) for line in logged] == [  # type: ignore[attr-defined]
        ("apply_batch", len(records), expected)
    ]
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [(metric["RecordsApplied"], metric["RecordsSkipped"]) for metric in metrics] == [
        ([1], [expected["skipped"]])
    ]
