"""Resizing a resource in place (issue 38): `PATCH .../resources/{id}` `{"amount": M}` grows a
resource as a create of the difference would be admitted and shrinks it at once, on both route
families; the counters, the eventual counter and the invariants follow in units; a retry never
applies twice; a resize racing a delete or another resize ends in one outcome (docs/admission.md,
"Resizing")."""

from __future__ import annotations

from typing import Any

import pytest

from functions.adapters import keys
from functions.adapters.resources import resource_key
from functions.core import accounts
from functions.core.admission import Directory, ShardingSettings
from functions.core.errors import CallerGaveUp, LimitExceeded, ResourceNotFound
from functions.core.model import NewResource, Quota
from tests.handler.conftest import Harness, Kind


def create(kind: Kind, amount: int, name: str = "r") -> dict[str, Any]:
    response = kind.harness.api.request("POST", kind.resources_url, {"name": name, "amount": amount})
    assert response.status == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def resize(kind: Kind, resource_id: str, amount: Any, headers: dict[str, str] | None = None) -> Any:
    return kind.harness.api.request("PATCH", f"{kind.resources_url}/{resource_id}", {"amount": amount}, headers)


@pytest.mark.engine
def test_a_resource_grows_while_units_are_free_and_shrinks_at_once(kind: Kind) -> None:
    kind.put(10)
    first = create(kind, 4)
    create(kind, 3, "other")
    grown = resize(kind, first["resourceId"], 7)
    assert grown.status == 200, grown.text
    assert (grown.json()["amount"], grown.headers["ETag"]) == (7, '"2"')
    refused = resize(kind, first["resourceId"], 8)  # 0 free: a growth of 1 is refused
    assert (refused.status, refused.json()["error"]["code"]) == (409, "LimitExceeded")
    read = kind.harness.api.request("GET", f"{kind.resources_url}/{first['resourceId']}")
    assert (read.json()["amount"], read.headers["ETag"]) == (7, '"2"')  # unchanged
    kind.harness.check_invariants()

    shrunk = resize(kind, first["resourceId"], 1)
    assert shrunk.status == 200, shrunk.text
    assert "amount" not in shrunk.json()  # 1, as a create without an amount answers it
    assert shrunk.headers["ETag"] == '"3"'
    truth = kind.truth()
    assert (truth.live, truth.admitted, truth.room, truth.best_effort_net, truth.leases) == (4, 4, 6, 4, 0)
    kind.harness.check_invariants()
    kind.harness.pump()
    view = kind.read()
    assert (view["eventual"], view["bestEffort"], view["available"]) == (4, 4, 6)
    kind.harness.check_invariants()
    kind.check_bystander()


@pytest.mark.engine
def test_the_eventual_counter_applies_each_resize_once_counted_or_not(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 100)
    uncounted = api.request("POST", "/accounts/acme/resources", {"name": "a", "amount": 5}).json()
    counted = api.request("POST", "/accounts/acme/resources", {"name": "b", "amount": 5}).json()
    harness.pump()  # both counted
    assert api.request("PATCH", f"/accounts/acme/resources/{counted['resourceId']}", {"amount": 9}).status == 200
    late = api.request("POST", "/accounts/acme/resources", {"name": "c", "amount": 2}).json()
    # Resized before its create is counted: counted once, at its new amount.
    assert api.request("PATCH", f"/accounts/acme/resources/{late['resourceId']}", {"amount": 6}).status == 200
    # Resized twice before the consumer sees either: the counter moves 9 -> 3 once.
    assert api.request("PATCH", f"/accounts/acme/resources/{counted['resourceId']}", {"amount": 3}).status == 200
    harness.check_invariants()
    records = harness.tap.drain()
    assert harness.deliver(records) == []
    assert harness.deliver(records) == []  # every record again: nothing moves twice
    harness.pump()
    truth = harness.truth("acme")
    assert (truth.eventual, truth.live, truth.processed) == (5 + 3 + 6, 14, 14)
    # A delete after an uncounted resize subtracts what the counter holds, once.
    assert api.request("PATCH", f"/accounts/acme/resources/{uncounted['resourceId']}", {"amount": 50}).status == 200
    assert api.delete("acme", uncounted["resourceId"]).status == 204
    harness.pump()
    truth = harness.truth("acme")
    assert (truth.eventual, truth.live, truth.admitted, truth.room) == (9, 9, 9, 91)
    harness.check_invariants()


def test_a_resize_refused_or_of_nothing_writes_nothing(harness: Harness) -> None:
    harness.api.put_account("acme", 3)
    resource = harness.api.request("POST", "/accounts/acme/resources", {"name": "a", "amount": 2}).json()
    url = f"/accounts/acme/resources/{resource['resourceId']}"
    before = harness.truth("acme")
    for body in ({"amount": 0}, {"amount": 1.5}, {"amount": "3"}, {}, {"amount": 2, "name": "x"}):
        response = harness.api.request("PATCH", url, body)
        assert (response.status, response.json()["error"]["code"]) == (400, "ValidationError"), body
    same = harness.api.request("PATCH", url, {"amount": 2})
    assert (same.status, same.headers["ETag"]) == (200, '"1"')  # already so: no write, no new version
    assert harness.api.request("PATCH", "/accounts/acme/resources/nope", {"amount": 1}).status == 404
    assert harness.truth("acme") == before


@pytest.mark.engine
def test_if_match_resizes_only_the_version_read_and_a_keyed_retry_never_applies_twice(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 100)
    resource = api.request("POST", "/accounts/acme/resources", {"name": "a", "amount": 10}).json()
    url = f"/accounts/acme/resources/{resource['resourceId']}"
    mine = {"If-Match": '"1"', "Idempotency-Key": "resize-1"}
    assert api.request("PATCH", url, {"amount": 20}, mine).status == 200
    replay = api.request("PATCH", url, {"amount": 20}, mine)  # its answer was lost: the same request again
    assert (replay.status, replay.json()["amount"], replay.headers["ETag"]) == (200, 20, '"2"')
    mismatch = api.request("PATCH", url, {"amount": 30}, mine)
    assert (mismatch.status, mismatch.json()["error"]["code"]) == (422, "IdempotencyKeyMismatch")
    assert api.request("PATCH", url, {"amount": 15}).status == 200  # another caller's resize
    late = api.request("PATCH", url, {"amount": 20}, mine)  # now a retry must not undo it
    assert (late.status, late.json()["error"]["code"]) == (412, "PreconditionFailed")
    assert api.request("GET", url).json()["amount"] == 15
    stale = api.request("PATCH", url, {"amount": 5}, {"If-Match": '"2"'})
    assert stale.status == 412
    assert api.request("PATCH", url, {"amount": 5}, {"If-Match": '"3"'}).status == 200
    harness.pump()
    truth = harness.truth("acme")
    assert (truth.live, truth.eventual, truth.admitted, truth.best_effort_net) == (5, 5, 5, 5)
    harness.check_invariants()


@pytest.mark.engine
def test_a_growth_gathers_free_units_to_its_resources_shard_and_is_refused_only_when_too_few_are_free(
    harness: Harness,
) -> None:
    """A busy account's free units are spread over its shards: a resource admitted by shard 2 grows
    by units that shard 0 and others hold, and is refused only when the shards hold fewer in all."""
    store, quota = harness.wiring.api_store, Quota("acme")
    settings = ShardingSettings(max_shards=4)
    directory = Directory(settings)
    harness.api.put_account("acme", 40)
    assert store.set_active(quota, 1, 1, 4)
    directory.learn(quota, 4, 4)
    made = [
        accounts.create_resource(
            store, quota, NewResource(f"r{i}", amount=2), None, harness.clock.timestamp, directory=directory
        )
        for i in range(8)
    ]
    on_other = next(created.resource for created in made if created.resource.shard > 0)
    free = 40 - 16
    grown = accounts.resize_resource(
        store, quota, on_other.resource_id, 2 + free, harness.clock.timestamp, directory=directory
    )
    assert (grown.amount, grown.shard) == (2 + free, on_other.shard)
    harness.check_invariants()
    with pytest.raises(LimitExceeded):
        accounts.resize_resource(
            store, quota, on_other.resource_id, 3 + free, harness.clock.timestamp, directory=directory
        )
    accounts.delete_resource(store, quota, on_other.resource_id, harness.clock.timestamp, directory=directory)
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room) == (14, 14, 26)
    harness.pump()
    harness.check_invariants()
    with pytest.raises(ResourceNotFound):
        accounts.resize_resource(store, quota, on_other.resource_id, 1, harness.clock.timestamp, directory=directory)


def test_a_delete_that_read_the_amount_before_a_resize_frees_what_the_resource_holds(harness: Harness) -> None:
    """The delete's soft delete is conditional on the amount it took from best-effort: after a
    resize it gives that back and takes the new amount."""
    store, quota = harness.wiring.api_store, Quota("acme")
    harness.api.put_account("acme", 50)
    created = accounts.create_resource(store, quota, NewResource("r", amount=4), None, harness.clock.timestamp)
    stale = created.resource
    accounts.resize_resource(store, quota, stale.resource_id, 9, harness.clock.timestamp)
    reads = iter([stale])
    real = store.get_resource

    def first_read_stale(q: Quota, rid: str) -> Any:
        return next(reads, None) or real(q, rid)

    store.get_resource = first_read_stale  # type: ignore[method-assign]
    try:
        directory = Directory()
        directory.learn(quota, 2, 2)  # a busy account's path: read the resource, then take its amount
        accounts.delete_resource(store, quota, stale.resource_id, harness.clock.timestamp, directory=directory)
    finally:
        del store.get_resource
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room, truth.best_effort_net, truth.leases) == (0, 0, 50, 0, 0)
    harness.pump()
    harness.check_invariants()
    item = harness.backend.dynamodb.get_item(
        TableName=harness.backend.table, Key=resource_key(quota, stale.resource_id)
    )
    assert item["Item"]["type"]["S"] == "tombstone"
    assert keys.account_pk(quota) == item["Item"]["pk"]["S"]


def test_would_admit_answers_from_the_free_units_and_reserves_nothing(kind: Kind) -> None:
    kind.put(10)
    create(kind, 6)
    url = kind.url + "/admission"
    api = kind.harness.api
    before = kind.truth()
    assert api.request("GET", f"{url}?amount=4").json() == {"amount": 4, "admitted": True, "free": 4}
    assert api.request("GET", f"{url}?amount=5").json() == {"amount": 5, "admitted": False, "free": 4}
    assert api.request("GET", url).json() == {"amount": 1, "admitted": True, "free": 4}
    assert kind.truth() == before  # nothing reserved, nothing written
    for refused in ("0", "-1", "1.5", "x", str(2**53)):
        response = api.request("GET", f"{url}?amount={refused}")
        assert (response.status, response.json()["error"]["code"]) == (400, "ValidationError"), refused
    missing = api.request("GET", "/accounts/nobody/admission?amount=1")
    assert (missing.status, missing.json()["error"]["code"]) == (404, "AccountNotFound")


def test_would_admit_adds_the_free_units_of_every_shard(harness: Harness) -> None:
    store, quota = harness.wiring.api_store, Quota("acme")
    harness.api.put_account("acme", 40)
    assert store.set_active(quota, 1, 1, 4)
    directory = Directory(ShardingSettings(max_shards=4))
    directory.learn(quota, 4, 4)
    for index in range(8):
        accounts.create_resource(
            store, quota, NewResource(f"r{index}", amount=2), None, harness.clock.timestamp, directory=directory
        )
    spread = [shard.room for shard in store.read_shards(quota, range(4))]
    assert sum(1 for room in spread if room) > 1  # the free units are on more than one shard
    answer = harness.api.request("GET", "/accounts/acme/admission?amount=24").json()
    assert answer == {"amount": 24, "admitted": True, "free": 24}
    assert accounts.would_admit(store, quota, 25).admitted is False


@pytest.mark.engine
def test_a_resize_crosses_usage_thresholds_as_a_create_does(harness: Harness) -> None:
    from tests.handler.test_usage_thresholds import crossings

    api = harness.api
    api.put_account("acme", 10)
    resource = api.request("POST", "/accounts/acme/resources", {"name": "a", "amount": 5}).json()
    harness.pump()
    url = f"/accounts/acme/resources/{resource['resourceId']}"
    assert api.request("PATCH", url, {"amount": 9}).status == 200
    harness.pump()
    assert crossings(harness) == [(80, "up", 9)]
    assert api.request("PATCH", url, {"amount": 10}).status == 200
    harness.pump()
    assert api.request("PATCH", url, {"amount": 2}).status == 200
    harness.pump()
    assert crossings(harness) == [(80, "up", 9), (100, "up", 10), (100, "down", 2), (80, "down", 2)]


@pytest.mark.engine
def test_racing_resizes_end_in_one_outcome_and_the_loser_gives_its_units_back(harness: Harness) -> None:
    """Two resizes read the same version; the one whose write comes second finds the version moved,
    gives its lease back, reads again and applies to what the first left: no unit leaked."""
    store, quota = harness.wiring.api_store, Quota("acme")
    harness.api.put_account("acme", 20)
    resource = accounts.create_resource(
        store, quota, NewResource("r", amount=4), None, harness.clock.timestamp
    ).resource
    real_resize = store.resize
    raced: list[Any] = []

    def another_resize_lands_first(current: Any, amount: int, token: str, key: str, now: str) -> Any:
        if not raced:  # ours read version 1 and holds its lease: another caller's whole resize lands now
            raced.append(None)
            raced[0] = accounts.resize_resource(store, quota, resource.resource_id, 15, harness.clock.timestamp)
        return real_resize(current, amount, token, key, now)

    store.resize = another_resize_lands_first  # type: ignore[method-assign]
    try:
        ours = accounts.resize_resource(store, quota, resource.resource_id, 6, harness.clock.timestamp)
    finally:
        del store.resize
    assert (raced[0].amount, raced[0].version) == (15, 2)
    assert (ours.amount, ours.version) == (6, 3)  # applied to what the other left, once
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room, truth.best_effort_net, truth.leases) == (6, 6, 14, 6, 0)
    harness.pump()
    harness.check_invariants()


@pytest.mark.parametrize("answers", [[False], [True, False]], ids=["before-the-lease", "after-the-lease"])
def test_a_late_resize_gives_back_whatever_it_took_and_changes_nothing(harness: Harness, answers: list[bool]) -> None:
    """A resize whose caller gave up (API Gateway's 504) starts no write, or gives its lease back
    before the resource's write."""
    store, quota = harness.wiring.api_store, Quota("acme")
    harness.api.put_account("acme", 20)
    resource = accounts.create_resource(
        store, quota, NewResource("r", amount=4), None, harness.clock.timestamp
    ).resource
    before = harness.truth("acme")
    for amount in (9, 2):  # a growth, then a shrink
        waiting = iter(answers)
        with pytest.raises(CallerGaveUp):
            accounts.resize_resource(
                store, quota, resource.resource_id, amount, harness.clock.timestamp, in_time=waiting.__next__
            )
        assert harness.truth("acme") == before
        assert store.get_resource(quota, resource.resource_id) == resource
