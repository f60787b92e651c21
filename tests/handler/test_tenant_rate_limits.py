"""Per-tenant rate limits through the real api handler and the real window writes
(functions/core/rate_limits.py, functions/adapters/rate_windows.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from functions.adapters import rate_windows, table_layout
from functions.adapters.attributes import from_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.rate_windows import DynamoWindowStore, window_key
from functions.core.model import TenantRate
from functions.core.rate_limits import DEFAULT_TENANT_RATE
from tests.conftest import Backend
from tests.handler.conftest import Harness

RATE = {"requestsPerSecond": 1, "burstSeconds": 3}  # windows of 3 s allowing 3 requests


@pytest.mark.engine
def test_a_lease_never_takes_the_count_past_the_allowance(backend: Backend) -> None:
    store = DynamoWindowStore(DynamoTable(backend.dynamodb, backend.table))
    window = TenantRate(requests_per_second=50, window_seconds=1).window_at(backend.clock.epoch_ms())
    with ThreadPoolExecutor(max_workers=8) as pool:
        granted = list(pool.map(lambda _: store.lease("acme", window, 0, 3), range(40)))
    # 16 leases of 3 fit, one takes the 2 left, the rest find the window spent.
    assert sum(granted) == 50
    assert sorted(set(granted)) == [0, 2, 3]
    item = from_attributes(backend.dynamodb.get_item(TableName=backend.table, Key=window_key("acme", window))["Item"])
    assert item[rate_windows.USED] == 50
    # Removed by the table's TTL a while after the window ends.
    assert item[table_layout.EXPIRES_AT] == window.end_ms // 1000 + rate_windows.WINDOW_KEPT_SECONDS


def test_a_busy_tenants_window_parts_are_items_of_their_own(backend: Backend) -> None:
    store = DynamoWindowStore(DynamoTable(backend.dynamodb, backend.table))
    rate = TenantRate(requests_per_second=2500, window_seconds=1)
    window = rate.window_at(backend.clock.epoch_ms())  # 3 parts: 834, 833, 833
    assert [store.lease("busy", window, part, 5000) for part in range(3)] == [834, 833, 833]
    assert store.lease("busy", window, 1, 1) == 0  # that part is spent
    keys = [window_key("busy", window, part)[table_layout.PARTITION_KEY]["S"] for part in range(3)]
    assert keys[0] == f"RATE#busy#1000#{window.index}"  # part 0: the key a one-item window has
    assert keys[1:] == [f"RATE#busy#1000#{window.index}#1", f"RATE#busy#1000#{window.index}#2"]
    for part, expected in enumerate([834, 833, 833]):
        found = backend.dynamodb.get_item(TableName=backend.table, Key=window_key("busy", window, part))["Item"]
        assert from_attributes(found)[rate_windows.USED] == expected


@pytest.mark.engine
def test_an_account_shows_its_rate_limit_the_default_until_an_admin_sets_one(harness: Harness) -> None:
    api = harness.api
    default = {
        "requestsPerSecond": DEFAULT_TENANT_RATE.requests_per_second,
        "burstSeconds": DEFAULT_TENANT_RATE.window_seconds,
    }
    assert api.put_account("acme", 5).json()["rateLimit"] == default
    assert api.request("PUT", "/accounts/acme", {"limit": 5, "rateLimit": RATE}).json()["rateLimit"] == RATE
    assert api.put_account("acme", 6).json()["rateLimit"] == RATE  # omitted: kept
    assert api.account("acme")["rateLimit"] == RATE


def test_a_rate_limit_outside_one_to_sixty_second_windows_is_refused(harness: Harness) -> None:
    for rate in (
        {"requestsPerSecond": 10, "burstSeconds": 0},
        {"requestsPerSecond": 1, "burstSeconds": 61},
        {"burstSeconds": 5},
    ):
        answer = harness.api.request("PUT", "/accounts/acme", {"limit": 5, "rateLimit": rate})
        assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError"), rate
    assert harness.api.request("GET", "/accounts/acme").status == 404  # nothing written


def test_a_tenant_over_its_rate_gets_429_and_another_tenant_does_not(harness: Harness) -> None:
    api = harness.api
    api.request("PUT", "/accounts/flood", {"limit": 5, "rateLimit": RATE})
    api.put_account("quiet", 5)
    started = harness.clock.epoch_ms()  # the limiter's windows are the handler's clock's
    flood = [api.request("GET", "/accounts/flood/resources") for _ in range(20)]
    windows = harness.clock.epoch_ms() // 3000 - started // 3000 + 1
    quiet = [api.request("GET", "/accounts/quiet/resources") for _ in range(20)]

    admitted = [answer for answer in flood if answer.status == 200]
    throttled = [answer for answer in flood if answer.status != 200]
    assert len(admitted) <= 3 * windows
    if windows == 1:
        assert len(admitted) == 3  # one environment strands nothing
    for answer in throttled:
        assert answer.status == 429
        error = answer.json()["error"]
        assert (error["code"], error["requestId"]) == ("TenantThrottled", "test-request"), error
        assert 1 <= int(answer.headers["Retry-After"]) <= 3
    assert all(answer.status == 200 for answer in quiet)
    # An admin can always change a flooding tenant's limits: PUT of the account is not counted.
    assert api.request("PUT", "/accounts/flood", {"limit": 5, "rateLimit": RATE}).status == 200


def test_every_request_on_an_account_counts_bad_ones_too(harness: Harness) -> None:
    api = harness.api
    api.request("PUT", "/accounts/flood", {"limit": 5, "rateLimit": {"requestsPerSecond": 1, "burstSeconds": 60}})
    answers = [api.request("POST", "/accounts/flood/resources", {"nope": 1}) for _ in range(61)]
    statuses = {answer.status for answer in answers}
    assert statuses <= {400, 429}
    assert 429 in statuses


def test_what_counts_is_the_route_the_request_matched(harness: Harness) -> None:
    """A tenant over its rate gets 429 on every route that names its account, a method the path
    does not take (405) and every type's routes included, but an admin's PUT of the account or of
    a type; a path the API does not have
    names no account and is 404. A body over 64 KiB or not UTF-8 is refused before the rate is asked."""
    api = harness.api
    harness.clock.set(datetime(2026, 11, 25, 13, 37, 0, 100_000, tzinfo=UTC))  # a 60 s window starts
    api.request("PUT", "/accounts/flood", {"limit": 5, "rateLimit": {"requestsPerSecond": 1, "burstSeconds": 60}})
    assert [api.request("GET", "/accounts/flood").status for _ in range(61)] == [200] * 60 + [429]

    for method, url, body in [
        ("GET", "/accounts/flood/resources?limt=1", None),  # the rate before the query
        ("POST", "/accounts/flood/resources", {"nope": 1}),  # the rate before the body
        ("PATCH", "/accounts/flood", None),
        ("DELETE", "/accounts/flood/resources/r1", None),
        ("OPTIONS", "/accounts/flood/resources/r1", None),
        # Every type's routes count against the one account: a tenant's flood is the tenant's.
        ("GET", "/accounts/flood/types", None),
        ("GET", "/accounts/flood/types/seats", None),
        ("POST", "/accounts/flood/types/seats/resources", {"name": "x"}),
        ("GET", "/accounts/flood/types/seats/resources", None),
        ("DELETE", "/accounts/flood/types/seats/resources/r1", None),
        ("PATCH", "/accounts/flood/types/seats", None),
    ]:
        answer = api.request(method, url, body)
        assert (answer.status, answer.json()["error"]["code"]) == (429, "TenantThrottled"), (method, url)
    for method, url, body, refused in [
        ("GET", "/accounts/flood/resources/r1/nothing", None, (404, "RouteNotFound")),
        (
            "POST",
            "/accounts/flood/resources",
            {"name": "x", "attributes": {"b": "y" * 70_000}},
            (413, "PayloadTooLarge"),
        ),
        ("POST", "/accounts/flood/resources", b'{"name": "\xff"}', (400, "ValidationError")),
    ]:
        answer = api.request(method, url, body)
        assert (answer.status, answer.json()["error"]["code"]) == refused, (method, url)
    assert api.request("PUT", "/accounts/flood", {"limit": 6}).status == 200
    assert api.put_type("flood", "seats", 6).status == 200  # an admin's PUT of a type, as of the account
