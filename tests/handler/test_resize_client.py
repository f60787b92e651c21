"""The Python client's resize (`resize_resource`, `resize_typed_resource`) through the real API
handler: a bridge on 127.0.0.1 hands each signed request the client sends to the handler as API
Gateway's proxy event (the harness's in-process API, tests/support/api_events.py), on this tier's
table. Reserve then settle, a resize landing between the client's read and its PATCH, and a lost
answer retried before and after another caller's resize: each ends with the units exact and the
invariants holding. The client's own rules against a scripted server: tests/client/test_resize.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hybrid_counter_client import LimitExceeded, LimitsClient, PreconditionFailed, Resource, TypedResource

from tests.handler.client_bridge import Bridge
from tests.handler.conftest import Kind

# On this tier's backend, and the client's too (`make client`).
pytestmark = pytest.mark.client


def create(kind: Kind, client: LimitsClient, amount: int) -> Resource | TypedResource:
    if kind.resource_type is None:
        return client.create_resource(Kind.ACCOUNT, "completion", amount=amount)
    return client.create_typed_resource(Kind.ACCOUNT, kind.resource_type, "completion", amount=amount)


def resize(kind: Kind, client: LimitsClient, resource_id: str, amount: int, **options: Any) -> Resource | TypedResource:
    if kind.resource_type is None:
        return client.resize_resource(Kind.ACCOUNT, resource_id, amount, **options)
    return client.resize_typed_resource(Kind.ACCOUNT, kind.resource_type, resource_id, amount, **options)


def another_callers_resize(kind: Kind, resource_id: str, amount: int) -> Callable[[], None]:
    def resize_now() -> None:
        response = kind.harness.api.request("PATCH", f"{kind.resources_url}/{resource_id}", {"amount": amount})
        assert response.status == 200, response.text

    return resize_now


def held(kind: Kind, resource_id: str) -> tuple[int, str]:
    """The resource's amount and ETag, as the API reads it now."""
    response = kind.harness.api.request("GET", f"{kind.resources_url}/{resource_id}")
    assert response.status == 200, response.text
    return response.json().get("amount", 1), response.headers["ETag"]


def test_reserve_then_settle(kind: Kind, client: LimitsClient, bridge: Bridge) -> None:
    kind.put(10_000)
    reserved = create(kind, client, 4000)
    assert (reserved.amount, kind.read()["available"]) == (4000, 6000)
    settled = resize(kind, client, reserved.resource_id, 3200)
    assert (settled.amount, settled.etag, settled.resource_id) == (3200, '"2"', reserved.resource_id)
    assert [method for method, _ in bridge.seen] == ["POST", "GET", "PATCH"]
    assert bridge.seen[-1] == ("PATCH", '"1"')  # the version it read
    assert kind.read()["available"] == 6800
    kind.harness.pump()
    view = kind.read()
    assert (view["eventual"], view["bestEffort"], view["used"]) == (3200, 3200, 3200)
    kind.harness.check_invariants()


@pytest.mark.engine
def test_a_resize_that_lands_between_the_read_and_the_patch_is_read_again(
    kind: Kind, client: LimitsClient, bridge: Bridge
) -> None:
    kind.put(100)
    resource = create(kind, client, 10)
    bridge.before["PATCH"] = [another_callers_resize(kind, resource.resource_id, 30)]
    resized = resize(kind, client, resource.resource_id, 20)
    assert (resized.amount, resized.etag) == (20, '"3"')  # after the other's, never over it unread
    assert bridge.seen[1:] == [("GET", None), ("PATCH", '"1"'), ("GET", None), ("PATCH", '"2"')]
    truth = kind.truth()
    assert (truth.live, truth.admitted, truth.leases) == (20, 20, 0)
    kind.harness.pump()
    assert kind.read()["eventual"] == 20
    kind.harness.check_invariants()


def test_a_lost_answer_is_retried_and_the_resize_applied_once(kind: Kind, client: LimitsClient, bridge: Bridge) -> None:
    kind.put(100)
    resource = create(kind, client, 10)
    bridge.lose.add("PATCH")
    resized = resize(kind, client, resource.resource_id, 40)
    assert (resized.amount, resized.etag) == (40, '"2"')  # the first attempt's, answered again
    assert bridge.seen[1:] == [("GET", None), ("PATCH", '"1"'), ("PATCH", '"1"')]
    truth = kind.truth()
    assert (truth.live, truth.admitted, truth.room, truth.leases) == (40, 40, 60, 0)
    kind.harness.check_invariants()


def test_a_retry_after_another_callers_resize_never_undoes_it(kind: Kind, client: LimitsClient, bridge: Bridge) -> None:
    """The first attempt landed and its answer was lost; another caller resized before the retry:
    the retry is PreconditionFailed, and the other caller's amount stands."""
    kind.put(100)
    resource = create(kind, client, 10)
    bridge.lose.add("PATCH")
    bridge.before["PATCH"] = [None, another_callers_resize(kind, resource.resource_id, 25)]
    with pytest.raises(PreconditionFailed):
        resize(kind, client, resource.resource_id, 40)
    assert bridge.seen[1:] == [("GET", None), ("PATCH", '"1"'), ("PATCH", '"1"')]  # not read again
    assert held(kind, resource.resource_id) == (25, '"3"')
    truth = kind.truth()
    assert (truth.live, truth.admitted, truth.leases) == (25, 25, 0)
    kind.harness.pump()
    kind.harness.check_invariants()


def test_a_growth_past_the_free_units_is_refused_and_the_resource_kept(kind: Kind, client: LimitsClient) -> None:
    kind.put(10)
    resource = create(kind, client, 6)
    with pytest.raises(LimitExceeded):
        resize(kind, client, resource.resource_id, 11)
    assert held(kind, resource.resource_id) == (6, '"1"')
    shrunk = resize(kind, client, resource.resource_id, 2, if_match='"1"')
    assert (shrunk.amount, shrunk.etag) == (2, '"2"')
    kind.harness.check_invariants()


def test_would_admit_through_the_client_reserves_nothing(kind: Kind, client: LimitsClient) -> None:
    kind.put(10)
    create(kind, client, 7)
    before = kind.truth()
    if kind.resource_type is None:
        asked, default = client.would_admit(kind.ACCOUNT, 3), client.would_admit(kind.ACCOUNT)
    else:
        asked = client.would_admit_typed(kind.ACCOUNT, kind.resource_type, 4)
        default = client.would_admit_typed(kind.ACCOUNT, kind.resource_type)
    assert (asked.admitted, asked.free) == (kind.resource_type is None, 3)
    assert (default.amount, default.admitted, default.free) == (1, True, 3)
    assert kind.truth() == before
