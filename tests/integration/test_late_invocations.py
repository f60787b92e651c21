"""Late invocations through the local runtime's API: a request runs on after its caller gave up and
retried, and after the resource was deleted and removed. It must not bring the resource back,
count anything twice or hold a slot (docs/admission.md, "Late invocations").

The local runtime holds the first put (or the first delete's decrement) of a `late-*` account back
for a few seconds, so the caller's short timeout expires while the invocation goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hybrid_counter_client import IdempotencyKeyReused, LimitExceeded, LimitsClient, NoResponse, ResourceNotFound

from functions.adapters.account_item import leases_of
from functions.adapters.attributes import from_attributes
from functions.adapters.shards import account_key
from functions.core.model import Quota
from local.http_client import poll
from local.product import SINGLE_ATTEMPT, api_client, new_account
from tests.integration.conftest import (
    LATE_CREATE,
    LATE_DELETE,
    LATE_SECONDS,
    RELEASE_LATE_CREATE,
    RELEASE_LATE_DELETE,
    RunningSystem,
)


def stored_account(runtime: Any, account_id: str) -> dict[str, Any]:
    item = runtime.client("dynamodb").get_item(
        TableName=runtime.outputs["TableName"], Key=account_key(Quota(account_id)), ConsistentRead=True
    )["Item"]
    return from_attributes(item)


def impatient(running_system: RunningSystem) -> LimitsClient:
    """The client, giving up on an answer after a second (and not trying again)."""
    credentials = running_system.api.credentials
    return api_client(
        running_system.api.base_url, credentials, running_system.api.region, timeout=1, retry=SINGLE_ATTEMPT
    )


def test_a_late_keyed_create_does_not_bring_back_a_deleted_resource(
    running_system: RunningSystem, local_runtime: Any
) -> None:
    client = running_system.client
    # Raw HTTP: an unkeyed PUT. The fault holds the first PutItem on the account's partition back,
    # which a keyed PUT (the client's always are) makes too: the create's put must be the first.
    account_id = running_system.api.new_account(
        prefix=LATE_CREATE, limit=2
    )  # the late invocation holds a slot meanwhile
    with pytest.raises(NoResponse):  # the caller gives up: its invocation's put is held back
        impatient(running_system).create_resource(account_id, "vm", idempotency_key="k1")
    # The retry runs at once, in another sandbox (raw HTTP: its 201, not a replay's 200).
    retried = running_system.api.create(account_id, "vm", key="k1")
    assert retried.status == 201
    resource_id = retried.body["resourceId"]
    client.delete_resource(account_id, resource_id)
    poll(lambda: client.get_account(account_id), lambda a: a.eventual == 0 and a.best_effort == 0)

    # The late invocation's put lands after all that; it must find the key taken by the tombstone.
    Path(RELEASE_LATE_CREATE).touch()
    settled = poll(
        lambda: stored_account(local_runtime, account_id),
        lambda item: not leases_of(item),
        timeout=LATE_SECONDS * 5,
    )
    assert (settled["admitted"], settled["best_effort"]) == (0, 0)
    with pytest.raises(ResourceNotFound):
        client.get_resource(account_id, resource_id)
    assert list(client.list_resources(account_id)) == []
    with pytest.raises(IdempotencyKeyReused):
        client.create_resource(account_id, "vm", idempotency_key="k1")
    # Both slots are free: nothing holds them.
    client.create_resource(account_id, "next-0")
    client.create_resource(account_id, "next-1")
    with pytest.raises(LimitExceeded):
        client.create_resource(account_id, "next-2")


def test_a_late_delete_after_its_retry_succeeded_changes_nothing(
    running_system: RunningSystem, local_runtime: Any
) -> None:
    client = running_system.client
    account_id = new_account(client, prefix=LATE_DELETE, limit=2)
    keep = client.create_resource(account_id, "keep").resource_id
    doomed = client.create_resource(account_id, "doomed").resource_id
    with pytest.raises(NoResponse):  # the caller gives up: its invocation's decrement is held back
        impatient(running_system).delete_resource(account_id, doomed)
    # Raw HTTP: the retry's own 204 (the client also takes a 404 after a lost answer as done).
    assert running_system.api.delete(account_id, doomed).status == 204
    Path(RELEASE_LATE_DELETE).touch()  # the late decrement lands after the retry's delete

    settled = poll(
        lambda: stored_account(local_runtime, account_id),
        lambda item: not leases_of(item),
        timeout=LATE_SECONDS * 5,
    )
    assert (settled["admitted"], settled["best_effort"]) == (1, 1)  # the late decrement was given back
    account = poll(lambda: client.get_account(account_id), lambda a: a.eventual == 1)
    assert account.used == 1
    assert client.get_resource(account_id, keep).resource_id == keep
