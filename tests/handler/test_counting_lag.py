"""The consumer's counting lag (created -> counted), the dashboard's p95 (infra/monitoring.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

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


def test_a_real_batch_publishes_its_lag(harness: Harness, capsys: object) -> None:
    harness.api.put_account("acme", 5)
    harness.api.create("acme")
    harness.pump()
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert '"CountingLag"' in out  # the EMF blob Powertools prints for CloudWatch
