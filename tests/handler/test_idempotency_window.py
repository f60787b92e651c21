"""The Idempotency-Key window (docs/api.md, docs/admission.md): a key is remembered while
its resource lives and, once its delete is counted, by the tombstone for the retention
(TOMBSTONE_RETENTION_SECONDS, 24 h by default); after that the key is free. DynamoDB's TTL removes
an expired tombstone within days, not at once, so an expired one that is still there frees the key
too. Through the real handler, consumer and conditions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from functions.adapters import keys, resources, table_layout
from functions.adapters.attributes import from_attributes, to_attributes
from functions.core.leases import DEFAULT_TOMBSTONE_RETENTION
from functions.core.model import Quota
from tests.handler.conftest import Harness

ACME = Quota("acme")

KEY = "order-7"


def item(harness: Harness, resource_id: str) -> dict[str, Any] | None:
    key = {
        table_layout.PARTITION_KEY: keys.account_pk(ACME),
        table_layout.SORT_KEY: keys.resource_sk(resource_id),
    }
    found = harness.backend.dynamodb.get_item(TableName=harness.backend.table, Key=to_attributes(key))
    return from_attributes(found["Item"]) if "Item" in found else None


def deleted_and_counted(harness: Harness) -> str:
    """A keyed resource, created, deleted and counted: only its tombstone is left."""
    harness.api.put_account("acme", 5)
    resource_id = harness.api.create("acme", "vm", key=KEY).json()["resourceId"]
    assert harness.api.delete("acme", resource_id).status == 204
    harness.pump()
    tombstone = item(harness, resource_id)
    assert tombstone is not None
    assert tombstone[table_layout.ITEM_TYPE] == resources.TOMBSTONE
    return resource_id


def test_a_retry_within_the_window_after_its_resource_was_removed_is_refused(harness: Harness) -> None:
    resource_id = deleted_and_counted(harness)
    tombstone = item(harness, resource_id)
    assert tombstone is not None
    # The tombstone lasts the window from the counted delete (just now, on the test's clock).
    window = int(DEFAULT_TOMBSTONE_RETENTION.total_seconds())
    assert 0 <= harness.clock.epoch_seconds() + window - tombstone[table_layout.EXPIRES_AT] < 60
    harness.clock.advance(DEFAULT_TOMBSTONE_RETENTION - timedelta(minutes=1))  # the window's last minute
    retry = harness.api.create("acme", "vm", key=KEY)
    assert (retry.status, retry.json()["error"]["code"]) == (409, "IdempotencyKeyReused")
    assert harness.api.account("acme")["bestEffort"] == 0


def test_after_the_window_the_key_creates_again_even_before_ttl_removes_the_tombstone(harness: Harness) -> None:
    resource_id = deleted_and_counted(harness)
    harness.clock.advance(DEFAULT_TOMBSTONE_RETENTION + timedelta(seconds=1))  # over, and TTL has not run yet
    again = harness.api.create("acme", "vm", key=KEY)
    assert again.status == 201, again.text
    assert again.json()["resourceId"] == resource_id  # the key names the same id
    assert harness.api.create("acme", "vm", key=KEY).status == 200  # a replay of the new one
    harness.pump()
    account = harness.api.account("acme")
    assert (account["bestEffort"], account["eventual"]) == (1, 1)
    harness.check_invariants()


def test_after_ttl_removed_the_tombstone_the_key_creates_again(harness: Harness) -> None:
    resource_id = deleted_and_counted(harness)
    key = {
        table_layout.PARTITION_KEY: keys.account_pk(ACME),
        table_layout.SORT_KEY: keys.resource_sk(resource_id),
    }
    harness.backend.dynamodb.delete_item(TableName=harness.backend.table, Key=to_attributes(key))  # TTL's delete
    assert harness.api.create("acme", "vm", key=KEY).status == 201
    harness.pump()
    account = harness.api.account("acme")
    assert (account["bestEffort"], account["eventual"]) == (1, 1)


def test_a_live_resource_keeps_its_key_however_old() -> None:
    """The window runs from the counted delete: a live resource has no expiry to pass."""
    from functions.core.model import Resource

    live = Resource(ACME, "r1", "vm", {}, "2020-01-01T00:00:00.000Z", "f", "t")
    assert not live.expired(int(datetime(2100, 1, 1, tzinfo=UTC).timestamp()))
