"""Resource records decoded from the wire (functions/adapters/resource_records.py) and planned by the
core: stream records as Lambda delivers them and GetRecords reads them, pending-index entries, and
the stream filter, which must select exactly what the planner does."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from hypothesis import given
from hypothesis import strategies as st

from functions.adapters import keys, resources, table_layout
from functions.adapters.attributes import to_attributes
from functions.adapters.resource_records import from_stream_record, pending_record, stream_records
from functions.core.counting import CountingTask, LimitChangedRecord, TaskKind, plan_record, process_pending
from functions.core.model import Quota
from local.event_sources import lambda_shaped
from local.filters import matches_any
from tests.unit.test_counting import CREATE, REMOVE, REMOVE_COUNTED, REMOVE_UNCOUNTED, ScriptedStore, cancelled

A1 = Quota("a1")
RESIZE = CountingTask(TaskKind.COUNT_RESIZE, A1, "r1")


def record(event: str, sk: str = "RESOURCE#r1", seq: str = "100", **image: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"Keys": {"pk": {"S": "ACCOUNT#a1"}, "sk": {"S": sk}}, "SequenceNumber": seq}
    if event != "REMOVE":
        data["NewImage"] = {name: {"BOOL": value} for name, value in image.items()}
    return {"eventName": event, "dynamodb": data}


# TTL's deletes arrive as REMOVE records made by the service itself (DynamoDB developer guide,
# "DynamoDB Streams and Time to Live"), with the tombstone as the old image.
TTL_REMOVE = {
    **record("REMOVE", sk="RESOURCE#r1"),
    "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
}


def planned(raw: dict[str, Any]) -> CountingTask | None:
    """The task the consumer plans for a record Lambda delivers."""
    resource = from_stream_record(DynamoDBRecord(raw))
    return None if resource is None else plan_record(resource)


def planned_pending(item: dict[str, Any]) -> CountingTask | None:
    """The task a sweep plans for a pending-index entry (plain values here, typed on the wire)."""
    resource = pending_record(to_attributes(item))[1]
    return None if resource is None else plan_record(resource)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (record("INSERT", counter_processed=False, deleted=False), CREATE),
        (record("MODIFY", counter_processed=True, deleted=True), REMOVE_COUNTED),
        (record("MODIFY", counter_processed=False, deleted=True), REMOVE_UNCOUNTED),
        (record("MODIFY", counter_processed=True, deleted=False), None),  # the consumer's own flag flip
        (record("REMOVE"), None),  # the consumer's own hard delete
        (TTL_REMOVE, None),  # TTL removing an expired tombstone: its delete was counted long ago
        (record("INSERT", sk="RATE"), None),  # a rate window (functions/core/rate_limits.py)
        (record("INSERT", sk="ACCOUNT", counter_processed=False), None),  # account item
        (record("MODIFY", sk="COUNTER"), None),  # eventual counter item
        (record("INSERT", deleted=False), None),  # no flag at all: not ours to count
        ({"eventName": "INSERT"}, None),  # malformed
    ],
)
def test_plan_stream_record(raw: dict[str, Any], expected: CountingTask | None) -> None:
    assert planned(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        record("INSERT", counter_processed=False, deleted=False),
        record("MODIFY", counter_processed=True, deleted=True),
        record("MODIFY", counter_processed=False, deleted=True),
        record("MODIFY", counter_processed=True, deleted=False),
        record("INSERT", sk="ACCOUNT", counter_processed=False),
        record("MODIFY", sk="COUNTER"),
        TTL_REMOVE,
        record("INSERT", sk="RATE"),
    ],
)
def test_code_agrees_with_the_event_source_filter(raw: dict[str, Any]) -> None:
    """Redriven ranges are unfiltered: the code must select exactly what the filter lets through."""
    filtered_in = matches_any(table_layout.STREAM_FILTER_PATTERNS, raw)
    assert filtered_in == (planned(raw) is not None)


@st.composite
def stream_records_drawn(draw: Any) -> dict[str, Any]:
    sort_key = draw(st.sampled_from(["ACCOUNT", "COUNTER", "RESOURCE#r1", "RESOURCE#", "OTHER#x"]))
    image = {
        name: {"BOOL": value}
        for name, value in (
            ("counter_processed", draw(st.none() | st.booleans())),
            ("deleted", draw(st.none() | st.booleans())),
        )
        if value is not None
    }
    drawn: dict[str, Any] = {
        "eventName": draw(st.sampled_from(["INSERT", "MODIFY", "REMOVE"])),
        "dynamodb": {"Keys": {"pk": {"S": "ACCOUNT#a"}, "sk": {"S": sort_key}}, "SequenceNumber": "1"},
    }
    if draw(st.booleans()):
        drawn["dynamodb"]["NewImage"] = image
    return drawn


@given(stream_records_drawn())
def test_the_core_selects_exactly_what_the_event_source_filter_delivers(drawn: dict[str, Any]) -> None:
    """Redriven ranges bypass the filter: the core must apply the same selection by itself."""
    is_planned = planned(drawn) is not None
    filtered_in = matches_any(table_layout.STREAM_FILTER_PATTERNS, drawn)
    # An empty resource id ("RESOURCE#") passes the filter's prefix rule but names no resource.
    if drawn["dynamodb"]["Keys"]["sk"]["S"] == keys.RESOURCE_PREFIX:
        assert not is_planned
    else:
        assert is_planned == filtered_in


def test_a_record_says_which_admission_shard_admitted_its_resource() -> None:
    raw = record("INSERT", counter_processed=False, deleted=False)
    assert planned(raw) == CountingTask(TaskKind.COUNT_CREATE, A1, "r1")
    raw["dynamodb"]["NewImage"][resources.ADMITTED_BY] = {"N": "5"}
    assert planned(raw) == CountingTask(TaskKind.COUNT_CREATE, A1, "r1", shard=5)


def test_a_get_records_record_reads_as_the_record_lambda_delivers() -> None:
    """The redrive reads GetRecords' records with the consumer's codec (functions/adapters/streams.py)."""
    read = record("INSERT", seq="7", counter_processed=False, deleted=False)
    read["dynamodb"]["NewImage"]["created_at"] = {"S": "2026-11-23T12:00:00.000Z"}
    read["dynamodb"]["ApproximateCreationDateTime"] = datetime(2026, 11, 23, 12, tzinfo=UTC)  # as boto3 parses it
    delivered = lambda_shaped(read, "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/x")
    decoded = stream_records([DynamoDBRecord(read)])
    assert decoded == stream_records([DynamoDBRecord(delivered)])
    assert decoded[0][0] == "7"
    assert decoded[0][1] is not None
    assert decoded[0][1].created_at == "2026-11-23T12:00:00.000Z"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": False, "deleted": False}, CREATE),
        ({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": True, "deleted": True}, REMOVE_COUNTED),
        ({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": False, "deleted": True}, REMOVE_UNCOUNTED),
        ({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "deleted": True}, REMOVE),
        # Counted and live, yet pending: a resize to count, whose units its write's condition tells.
        ({"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": True, "deleted": False}, RESIZE),
        ({"pk": "ACCOUNT#a1", "sk": "ACCOUNT"}, None),
    ],
)
def test_plan_pending_item(item: dict[str, Any], expected: CountingTask | None) -> None:
    assert planned_pending(item) == expected


def test_sweep_reports_failed_items_by_key() -> None:
    store = ScriptedStore(count_results=[cancelled("ThrottlingError")])
    item = {"pk": "ACCOUNT#a1", "sk": "RESOURCE#r1", "counter_processed": False, "deleted": False}
    assert process_pending(store, [pending_record(to_attributes(item))]).failed == ["ACCOUNT#a1/RESOURCE#r1"]


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        (record("INSERT", sk=keys.limit_change_sk(2)), LimitChangedRecord(A1, 2)),
        (record("MODIFY", sk=keys.limit_change_sk(2)), None),  # its settling: no new change
        (record("REMOVE", sk=keys.limit_change_sk(2)), None),  # its TTL
        (record("INSERT", sk=keys.event_sk(1)), None),  # a crossing: the publisher's, not the consumer's
    ],
)
def test_a_limit_changes_insert_and_only_it_asks_the_consumer_for_a_decision(
    raw: dict[str, Any], decoded: LimitChangedRecord | None
) -> None:
    assert from_stream_record(DynamoDBRecord(raw)) == decoded
    assert matches_any(table_layout.STREAM_FILTER_PATTERNS, raw) == (decoded is not None)


def test_a_limit_changes_pending_entry_asks_for_its_decision() -> None:
    entry = {"pk": "ACCOUNT#a1", "sk": keys.limit_change_sk(7), "pending_bucket": "PENDING#01", "pending_since": "x"}
    assert pending_record(to_attributes(entry)) == (f"ACCOUNT#a1/{keys.limit_change_sk(7)}", LimitChangedRecord(A1, 7))
