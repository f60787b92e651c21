"""The capacity meter on real calls to the emulator, over the table the template defines."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from benchmarks.capacity_meter import CapacityMeter
from functions.adapters import table_layout
from functions.adapters.api_store import DynamoApiStore
from functions.adapters.dynamo_table import DynamoTable
from functions.core import accounts
from functions.core.model import NewResource, Quota
from tests.conftest import Backend

ACME = Quota("acme")


@pytest.fixture
def meter(backend: Backend) -> CapacityMeter:
    return CapacityMeter(backend.dynamodb, reader=boto3.client("dynamodb", endpoint_url=backend.endpoint_url))


def key(pk: str, sk: str) -> dict[str, dict[str, str]]:
    return {table_layout.PARTITION_KEY: {"S": pk}, table_layout.SORT_KEY: {"S": sk}}


def test_a_put_of_two_and_a_half_kilobytes_is_three_write_units(backend: Backend, meter: CapacityMeter) -> None:
    item = {**key("A#1", "R#1"), "data": {"S": "x" * (2560 - 4 - 3 - 3 - 2)}}  # 2,560 bytes in all
    with meter.operation("put") as usage:
        backend.dynamodb.put_item(TableName=backend.table, Item=item)
    assert usage.calls == {"PutItem": 1}
    assert usage.wcu == {(backend.table, "A#1"): 3}
    assert usage.item_wcu == {f"{backend.table} / A#1 / R#1": 3}


def test_a_transaction_of_two_items_is_four_write_units(backend: Backend, meter: CapacityMeter) -> None:
    with meter.operation("transaction") as usage:
        backend.dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": backend.table, "Item": key("A#1", "R#1")}},
                {
                    "Update": {
                        "TableName": backend.table,
                        "Key": key("A#2", "COUNTER"),
                        "UpdateExpression": "ADD n :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                },
            ]
        )
    assert usage.wcu == {(backend.table, "A#1"): 2, (backend.table, "A#2"): 2}


def test_a_failed_conditional_update_is_billed(backend: Backend, meter: CapacityMeter) -> None:
    backend.dynamodb.put_item(TableName=backend.table, Item={**key("A#1", "ACCOUNT"), "n": {"N": "5"}})
    with meter.operation("refused") as usage, pytest.raises(ClientError):
        backend.dynamodb.update_item(
            TableName=backend.table,
            Key=key("A#1", "ACCOUNT"),
            UpdateExpression="ADD n :one",
            ConditionExpression="n < :five",
            ExpressionAttributeValues={":one": {"N": "1"}, ":five": {"N": "5"}},
        )
    assert usage.calls == {"UpdateItem": 1}
    assert usage.total_wcu == 1


def test_an_update_moving_an_item_between_index_keys_writes_the_index_twice(
    backend: Backend, meter: CapacityMeter
) -> None:
    account = {
        **key("A#1", "ACCOUNT"),
        table_layout.ACTIVITY_BUCKET: {"S": "7"},
        table_layout.LAST_WRITE: {"S": "2026-11-23T10:00:00.000Z"},
    }
    backend.dynamodb.put_item(TableName=backend.table, Item=account)
    with meter.operation("touch") as usage:
        backend.dynamodb.update_item(
            TableName=backend.table,
            Key=key("A#1", "ACCOUNT"),
            UpdateExpression="SET #at = :now",
            ExpressionAttributeNames={"#at": table_layout.LAST_WRITE},
            ExpressionAttributeValues={":now": {"S": "2026-11-23T10:00:01.000Z"}},
        )
    index_place = f"{backend.table} index {table_layout.ACTIVITY_INDEX.name}"
    assert usage.wcu == {(backend.table, "A#1"): 1, (index_place, "7"): 2}


def test_reads_are_billed_by_consistency(backend: Backend, meter: CapacityMeter) -> None:
    backend.dynamodb.put_item(TableName=backend.table, Item=key("A#1", "R#1"))
    with meter.operation("reads") as usage:
        backend.dynamodb.get_item(TableName=backend.table, Key=key("A#1", "R#1"), ConsistentRead=True)
        backend.dynamodb.get_item(TableName=backend.table, Key=key("A#1", "R#1"))
        backend.dynamodb.get_item(TableName=backend.table, Key=key("A#1", "absent"))
    assert usage.rcu == {(backend.table, "A#1"): 1 + 0.5 + 0.5}


# --- what the flows cost, where a design choice rests on it --------------------------------------


def test_an_accounts_activity_index_entry_moves_at_most_once_a_minute(backend: Backend, meter: CapacityMeter) -> None:
    """Account writes stamp last_write_at rounded up to the minute (docs/healing.md): within one
    minute a busy account's creates write no index entry; the next minute's first write moves it."""
    store = DynamoApiStore(DynamoTable(backend.dynamodb, backend.table))
    accounts.put_account(
        store, ACME, accounts.limit_change(100, backend.clock.epoch_ms()), lambda: "2026-11-23T12:00:05.000Z"
    )
    index = f"{backend.table} index {table_layout.ACTIVITY_INDEX.name}"

    def create_at(now: str) -> float:
        with meter.operation(now) as usage:
            accounts.create_resource(store, ACME, NewResource("vm"), None, lambda: now)
        return sum(units for (place, _), units in usage.wcu.items() if place == index)

    assert create_at("2026-11-23T12:00:10.000Z") == 0
    assert create_at("2026-11-23T12:00:59.999Z") == 0
    assert create_at("2026-11-23T12:01:00.001Z") == 2  # its key moves: a delete and a put
    assert create_at("2026-11-23T12:01:30.000Z") == 0


def test_a_quiet_accounts_iteration_makes_the_calls_the_load_benchmark_divides_by(
    backend: Backend, meter: CapacityMeter
) -> None:
    """A quiet account's create and delete make three calls each, all writes, no transaction and no
    read (docs/scaling.md); with the consumer's two counts, an iteration is the
    CALLS_PER_ITERATION that `make bench-load` divides the emulator's raw rate by."""
    from benchmarks.load import CALLS_PER_ITERATION
    from functions.adapters.counting_store import DynamoCountingStore
    from local.filters import matches_any
    from tests.support.stream import StreamTap, process_stream_records

    store, counting = (
        DynamoApiStore(DynamoTable(backend.dynamodb, backend.table)),
        DynamoCountingStore(DynamoTable(backend.dynamodb, backend.table), backend.clock),
    )
    tap = StreamTap(backend.streams, backend.stream_arn)

    def deliver() -> None:
        """Each record alone (a trickle), through the consumer's filter, as Lambda delivers them."""
        for record in tap.drain():
            if matches_any(table_layout.STREAM_FILTER_PATTERNS, record):
                process_stream_records(counting, [record])

    accounts.put_account(
        store, ACME, accounts.limit_change(10, backend.clock.epoch_ms()), lambda: "2026-11-24T12:00:00.000Z"
    )
    deliver()
    # The counter's first count decides its usage thresholds' headroom (functions/core/thresholds.py):
    # a quiet account's counts after that are one transaction each.
    first = accounts.create_resource(store, ACME, NewResource("vm"), None, lambda: "2026-11-24T12:00:00.500Z")
    deliver()
    accounts.delete_resource(store, ACME, first.resource.resource_id, lambda: "2026-11-24T12:00:00.600Z")
    deliver()
    with meter.operation("create") as create:
        created = accounts.create_resource(store, ACME, NewResource("vm"), None, lambda: "2026-11-24T12:00:01.000Z")
    with meter.operation("count") as count:
        deliver()
    with meter.operation("delete") as delete:
        accounts.delete_resource(store, ACME, created.resource.resource_id, lambda: "2026-11-24T12:00:02.000Z")
    with meter.operation("remove") as remove:
        deliver()

    assert create.calls == {"UpdateItem": 2, "PutItem": 1}
    assert delete.calls == {"UpdateItem": 3}
    assert not delete.rcu
    assert (count.calls, remove.calls) == ({"TransactWriteItems": 1}, {"TransactWriteItems": 1})
    consumer = sum(count.calls.values()) + sum(remove.calls.values())
    assert sum(create.calls.values()) + sum(delete.calls.values()) + consumer == CALLS_PER_ITERATION


def test_a_quiet_accounts_delete_of_amount_n_makes_three_writes_more_and_no_read(
    backend: Backend, meter: CapacityMeter
) -> None:
    """The quiet delete takes 1 without reading (docs/admission.md, "Amounts"): a resource of
    amount N refuses its soft delete, whose old item says N, so it gives the 1 back and takes N.
    Six writes, all UpdateItem, no read: 4 WCU on the account item (take, undo, take, finish) and 2
    on the resource (the refused soft delete is billed), what docs/admission.md says it costs."""
    store = DynamoApiStore(DynamoTable(backend.dynamodb, backend.table))
    accounts.put_account(
        store, ACME, accounts.limit_change(100, backend.clock.epoch_ms()), lambda: "2026-11-24T12:00:00.000Z"
    )
    created = accounts.create_resource(
        store, ACME, NewResource("vm", amount=64), None, lambda: "2026-11-24T12:00:01.000Z"
    )
    with meter.operation("delete of 64") as delete:
        accounts.delete_resource(store, ACME, created.resource.resource_id, lambda: "2026-11-24T12:00:02.000Z")
    assert delete.calls == {"UpdateItem": 6}
    assert not delete.rcu
    account, resource = f"{backend.table} / ACCOUNT#acme / ACCOUNT", f"{backend.table} / ACCOUNT#acme / RESOURCE#"
    assert delete.item_wcu == {account: 4, resource + created.resource.resource_id: 2}  # the refused soft delete: 1


def test_the_periodic_report_meters_every_item_a_usage_record_writes(backend: Backend) -> None:
    """`make bench-capacity`'s periodic report (benchmarks/periodic_capacity.py) on a small run: every
    item its flows wrote (records, period shards and counters, the quota's account item, the
    baselines' counters and markers) is one the meter billed, and a quiet record's create and count
    each bill its record and its period's items, so no write of a record goes unmetered."""
    from benchmarks.periodic_capacity import (
        OPEN,
        QUIET_COUNT,
        QUIET_CREATE,
        PeriodicSettings,
        family,
        measure_periodic,
        report,
    )

    reader = boto3.client("dynamodb", endpoint_url=backend.endpoint_url)

    def items() -> dict[str, Any]:
        pages = reader.get_paginator("scan").paginate(TableName=backend.table, ConsistentRead=True)
        found = [item for page in pages for item in page["Items"]]
        return {
            " / ".join([backend.table, item[table_layout.PARTITION_KEY]["S"], item[table_layout.SORT_KEY]["S"]]): item
            for item in found
        }

    before = items()
    settings = PeriodicSettings(records=2, hot_records=4, warmup=2, batch=2, start=backend.clock.now())
    run = measure_periodic(backend.dynamodb, reader, backend.streams, backend.table, backend.stream_arn, settings)
    after = items()

    written = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    billed = {item for usage in run.meter.usage.values() for item in usage.item_wcu}
    assert written, "the run wrote nothing"
    assert written - billed == set()
    period = f"@{run.window_id}"
    quiet_items = {family(item) for item in run.meter.usage[QUIET_CREATE].item_wcu}
    assert quiet_items == {"ACCOUNT#periodic#quiet@<period> / ACCOUNT", "ACCOUNT#periodic#quiet / RESOURCE#<id>"}
    counted_items = set(run.meter.usage[QUIET_COUNT].item_wcu)
    assert any(item.endswith(f"{period} / COUNTER") for item in counted_items)
    assert any("/ RESOURCE#" in item for item in counted_items)
    # The open wrote the next period's shard 0, which only it could have written.
    assert any(f"@{run.next_window_id} / ACCOUNT" in item for item in run.meter.usage[OPEN].item_wcu)
    assert "what each WCU of a busy record buys" in report(run)
