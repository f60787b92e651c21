"""The consumer's counting lag (created -> counted), the dashboard's p95 (infra/monitoring.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from tests.handler.conftest import Harness

NOW = datetime(2026, 11, 23, 12, 0, 10, tzinfo=UTC)


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
    assert counting_lags_ms(records, ["2"], NOW) == [1500.0]


def test_a_real_batch_publishes_its_lag(harness: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    """The lag runs from the resource's creation to the consumer's clock (both the clients' clock)."""
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
