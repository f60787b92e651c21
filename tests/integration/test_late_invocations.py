"""Late invocations through the local runtime's API: a request runs on after its caller gave up and
retried, and after the resource was deleted and removed. It must not bring the resource back,
count anything twice or hold a slot (docs/admission.md, "Late invocations").

The local runtime holds the first put (or the first delete's decrement) of a `late-*` account back
for a few seconds, so the caller's short timeout expires while the invocation goes on.
"""

from __future__ import annotations

import urllib.error
from pathlib import Path
from typing import Any

import pytest

from functions.adapters.account_item import leases_of
from functions.adapters.attributes import from_attributes
from functions.adapters.shards import account_key
from functions.core.model import Quota
from local.http_client import poll
from local.product import CounterApi
from tests.integration.conftest import (
    LATE_CREATE,
    LATE_DELETE,
    LATE_SECONDS,
    RELEASE_LATE_CREATE,
    RELEASE_LATE_DELETE,
    System,
)

GAVE_UP = (TimeoutError, urllib.error.URLError)  # the client's own timeout, while reading or connecting


def stored_account(runtime: Any, account_id: str) -> dict[str, Any]:
    item = runtime.client("dynamodb").get_item(
        TableName=runtime.outputs["TableName"], Key=account_key(Quota(account_id)), ConsistentRead=True
    )["Item"]
    return from_attributes(item)


def impatient(system: System) -> CounterApi:
    return CounterApi(system.api.base_url, timeout=1, credentials=system.api.credentials, region=system.api.region)


def test_a_late_keyed_create_does_not_bring_back_a_deleted_resource(system: System, local_runtime: Any) -> None:
    api = system.api
    account_id = api.new_account(prefix=LATE_CREATE, limit=2)  # the late invocation holds a slot meanwhile
    with pytest.raises(GAVE_UP):  # the caller gives up: its invocation's put is held back
        impatient(system).create(account_id, "vm", key="k1")
    retried = api.create(account_id, "vm", key="k1")
    assert retried.status == 201  # the retry runs at once, in another sandbox
    resource_id = retried.body["resourceId"]
    assert api.delete(account_id, resource_id).status == 204
    poll(lambda: api.account(account_id), lambda a: a["eventual"] == 0 and a["bestEffort"] == 0)

    # The late invocation's put lands after all that; it must find the key taken by the tombstone.
    Path(RELEASE_LATE_CREATE).touch()
    settled = poll(
        lambda: stored_account(local_runtime, account_id),
        lambda item: not leases_of(item),
        timeout=LATE_SECONDS * 5,
    )
    assert (settled["admitted"], settled["best_effort"]) == (0, 0)
    assert api.request("GET", f"/accounts/{account_id}/resources/{resource_id}").status == 404
    assert api.request("GET", f"/accounts/{account_id}/resources").body["items"] == []
    assert api.create(account_id, "vm", key="k1").status == 409  # IdempotencyKeyReused
    # Both slots are free: nothing holds them.
    assert [api.create(account_id, f"next-{i}").status for i in range(3)] == [201, 201, 409]


def test_a_late_delete_after_its_retry_succeeded_changes_nothing(system: System, local_runtime: Any) -> None:
    api = system.api
    account_id = api.new_account(prefix=LATE_DELETE, limit=2)
    keep = api.create(account_id, "keep").body["resourceId"]
    doomed = api.create(account_id, "doomed").body["resourceId"]
    with pytest.raises(GAVE_UP):  # the caller gives up: its invocation's decrement is held back
        impatient(system).delete(account_id, doomed)
    assert api.delete(account_id, doomed).status == 204
    Path(RELEASE_LATE_DELETE).touch()  # the late decrement lands after the retry's delete

    settled = poll(
        lambda: stored_account(local_runtime, account_id),
        lambda item: not leases_of(item),
        timeout=LATE_SECONDS * 5,
    )
    assert (settled["admitted"], settled["best_effort"]) == (1, 1)  # the late decrement was given back
    account = poll(lambda: api.account(account_id), lambda a: a["eventual"] == 1)
    assert account["used"] == 1
    assert api.request("GET", f"/accounts/{account_id}/resources/{keep}").status == 200
