"""Ambiguous writes: each write lands, its answer is lost (a 500 the SDK retries), and the rest of the
system moves on before the retry. The caller must get the outcome that happened, and every counter
must be exact: not only the values the API shows, but `admitted`, `best_effort` and the leases
stored on the account item (docs/admission.md, "How each write recognises its own landing").

Each test would fail on a design whose retry cannot recognise its own landing: the comment under
each says what the earlier one (no leases, no tombstones) did.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from functions.core.healing import HealOutcome, heal_account
from functions.core.model import Quota, idempotent_resource_id
from tests.handler.conftest import Harness, Kind
from tests.support.faults import API_WRITES, Faults, dynamodb_error
from tests.support.truth import AccountTruth


def exact(harness: Harness, quota: Quota, live: int) -> AccountTruth:
    """After the stream is applied: every stored counter equals the live count, no lease is left."""
    harness.pump()
    truth = harness.truth(quota)
    stored = (truth.live, truth.eventual, truth.admitted, truth.best_effort_net, truth.leases)
    assert stored == (live, live, live, live, 0), f"live, eventual, admitted, best-effort, leases: {stored}"
    harness.check_invariants()
    return truth


def land_then_500(faults: Faults, write: str, meanwhile: object = None) -> list[int]:
    operation, matches = API_WRITES[write]
    return faults.lands_then_500(operation, matches, meanwhile or (lambda: None))  # type: ignore[arg-type]


# --- the API path ----------------------------------------------------------------------------------


def test_a_reservation_that_landed_is_not_answered_as_the_limit(harness: Harness, kind: Kind, faults: Faults) -> None:
    """Meanwhile another create finds the account full. The retry must see its own reservation,
    not a full account. (Before: 409 LimitExceeded, and the slot it had taken stayed held.)"""
    kind.put(2)
    kind.create("first")
    rival: list[int] = []
    landed = land_then_500(faults, "reserve", lambda: rival.append(kind.create("rival").status))
    assert kind.create("mine").status == 201
    assert landed == [1]
    assert rival == [409]
    exact(harness, kind.quota, live=2)


THROTTLED = dynamodb_error("ThrottlingException", "Rate of requests exceeds the allowed throughput.")


@pytest.mark.parametrize("write", ["reserve", "put", "soft-delete"])
def test_a_write_that_landed_then_had_its_retries_throttled_is_not_taken_for_one_that_never_landed(
    harness: Harness,
    kind: Kind,
    write: str,
    faults: Faults,
) -> None:
    """The first attempt lands and answers 500, the SDK's retries are throttled: the call ends in a
    400. Only the last answer is a 400; the first attempt may have landed, and did. (Found by chaos,
    seed 2: the create released its slot for a resource that existed, admitted < live. And seed 1:
    a throttled reservation grows the account and admits on another shard, so the one that had
    landed held a second slot for the same resource, admitted > live.)"""
    kind.put(1)
    resource_id = kind.create("first").json()["resourceId"] if write == "soft-delete" else None
    operation, matches = API_WRITES[write]
    landed = faults.lands_then_500(operation, matches)
    throttled = faults.answer_instead(operation, matches, THROTTLED, times=5)
    if resource_id is None:
        answer = kind.create("mine")
        assert answer.status == 201, answer.text  # its own item, read back
        live = 1
    else:
        answer = kind.delete(resource_id)
        assert answer.status == 204, answer.text
        live = 0
    assert landed == [1]
    assert throttled[0] >= 1
    exact(harness, kind.quota, live=live)
    assert kind.create("more").status == (409 if live else 201)


def test_a_put_that_landed_is_created_even_if_deleted_and_removed_before_the_retry(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    """Meanwhile the resource is deleted and the consumer removes it. The retry must find its own
    token on the tombstone, answer 201 and not create it again. (Before: the retry's conditional
    put found no item and put the resource back: a deleted resource came back to life.)"""
    api = harness.api
    kind.put(5)
    resource_id = idempotent_resource_id(kind.quota, "k1")

    def delete_and_count() -> None:
        assert kind.delete(resource_id).status == 204
        harness.pump()

    land_then_500(faults, "put", delete_and_count)
    created = kind.create("vm", key="k1")
    assert created.status == 201
    assert created.json()["resourceId"] == resource_id
    assert api.request("GET", f"{kind.resources_url}/{resource_id}").status == 404
    assert kind.create("vm", key="k1").status == 409  # IdempotencyKeyReused: never resurrected
    exact(harness, kind.quota, live=0)


def test_a_count_that_landed_is_applied_once(harness: Harness, kind: Kind, faults: Faults) -> None:
    kind.put(5)
    land_then_500(faults, "commit", harness.pump)
    assert kind.create().status == 201
    exact(harness, kind.quota, live=1)


def test_a_release_that_landed_is_applied_once(harness: Harness, kind: Kind, faults: Faults) -> None:
    """The put certainly failed (throttled on every attempt), so the reservation is released; the
    release lands, and meanwhile another create takes the freed slot."""
    kind.put(1)
    faults.answer_instead(*API_WRITES["put"], faults.dynamodb_error("ThrottlingException"), times=3)
    rival: list[int] = []
    land_then_500(faults, "release", lambda: rival.append(kind.create("rival").status))
    assert kind.create("mine").status == 503
    assert rival == [201]
    exact(harness, kind.quota, live=1)


def test_a_deletion_decrement_that_landed_is_applied_once(harness: Harness, kind: Kind, faults: Faults) -> None:
    """(Before: the SDK's retry decremented best-effort a second time.)"""
    api = harness.api
    kind.put(5)
    keep, doomed = (kind.create(name).json()["resourceId"] for name in ("keep", "doomed"))
    land_then_500(faults, "take-deletion", harness.pump)
    assert kind.delete(doomed).status == 204
    exact(harness, kind.quota, live=1)
    assert api.request("GET", f"{kind.resources_url}/{keep}").status == 200


def test_a_soft_delete_that_landed_is_answered_204_even_after_the_consumer_removed_it(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    """The case the issue found. (Before: the retry found no item, answered 404 and skipped the
    release, so `admitted` stayed one too high and creates were refused below the limit.)"""
    kind.put(1)
    resource_id = kind.create().json()["resourceId"]
    harness.pump()
    land_then_500(faults, "soft-delete", harness.pump)  # the consumer counts the delete and leaves a tombstone
    assert kind.delete(resource_id).status == 204
    exact(harness, kind.quota, live=0)
    assert kind.create().status == 201  # the slot is free again


def test_a_slot_release_that_landed_is_applied_once(harness: Harness, kind: Kind, faults: Faults) -> None:
    kind.put(1)
    resource_id = kind.create().json()["resourceId"]
    rival: list[int] = []
    land_then_500(faults, "finish-deletion", lambda: rival.append(kind.create("rival").status))
    assert kind.delete(resource_id).status == 204
    assert rival == [201]
    exact(harness, kind.quota, live=1)


def test_a_losing_delete_gives_back_its_decrement_once(harness: Harness, kind: Kind, faults: Faults) -> None:
    """Two deletes of one resource: the second's soft delete loses, so it gives back its decrement,
    and that write lands unseen. (Before: the loser's decrement was never given back.)"""
    kind.put(5)
    resource_id = kind.create().json()["resourceId"]
    winner: list[int] = []
    once = {"done": False}

    def let_the_other_delete_win(params: dict) -> None:
        if API_WRITES["soft-delete"][1](params) and not once["done"]:
            once["done"] = True
            winner.append(kind.delete(resource_id).status)

    faults.before_call("UpdateItem", let_the_other_delete_win)
    land_then_500(faults, "undo-deletion")
    assert kind.delete(resource_id).status == 404
    assert winner == [204]
    exact(harness, kind.quota, live=0)


# --- the consumer (the redrive and the sweeper apply records with the same code) ------------------


@pytest.mark.parametrize("counter", ["with headroom", "deciding"])
def test_a_count_transaction_that_landed_is_not_applied_twice(
    harness: Harness, kind: Kind, faults: Faults, counter: str
) -> None:
    """Meanwhile the resource is deleted and its delete counted, so the retry finds a tombstone.
    With headroom the count is the usual transaction; on a counter without it (its first count),
    the transaction that lands is the decision's (functions/core/thresholds.py)."""
    kind.put(5)
    if counter == "with headroom":
        kind.create("keep")
        harness.pump()
    resource_id = kind.create().json()["resourceId"]
    records = harness.tap.drain()

    def delete_and_count() -> None:
        assert kind.delete(resource_id).status == 204
        harness.pump()

    deciding = counter == "deciding"
    landed = faults.lands_then_500(
        "TransactWriteItems", lambda p: ("#decisions" in str(p["TransactItems"])) == deciding, delete_and_count
    )
    assert harness.deliver(records) == []
    assert landed == [1]
    exact(harness, kind.quota, live=0 if deciding else 1)


def test_a_removal_transaction_that_landed_is_not_applied_twice(harness: Harness, kind: Kind, faults: Faults) -> None:
    """Meanwhile a duplicate delivery of the same records runs to the end."""
    kind.put(5)
    resource_id = kind.create().json()["resourceId"]
    kind.create("keep")
    harness.pump()
    kind.delete(resource_id)
    records = harness.tap.drain()
    faults.lands_then_500("TransactWriteItems", lambda p: True, lambda: harness.deliver(records))
    assert harness.deliver(records) == []
    exact(harness, kind.quota, live=1)
    assert kind.truth().tombstones == 1


def test_an_uncounted_removal_that_landed_is_not_applied_twice(harness: Harness, kind: Kind, faults: Faults) -> None:
    """Created and deleted before the consumer ran: both cancel in one conditional update."""
    kind.put(5)
    resource_id = kind.create().json()["resourceId"]
    kind.delete(resource_id)
    records = harness.tap.drain()
    landed = faults.lands_then_500("UpdateItem", lambda p: "SET #type = :tombstone" in faults.expression(p))
    assert harness.deliver(records) == []
    assert landed == [1]
    exact(harness, kind.quota, live=0)


# --- heals ---------------------------------------------------------------------------------------


def test_a_heal_that_landed_reports_healed_even_if_the_account_moved_before_the_retry(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    kind.put(5)
    faults.crash_after_write("put")  # never counted by best-effort, and its lease stays
    with pytest.raises(faults.SimulatedCrash):
        kind.create()
    harness.pump()
    landed = faults.lands_then_500(
        "UpdateItem", lambda p: "heal_epoch" in faults.expression(p), lambda: kind.create("meanwhile")
    )
    quiet = timedelta(hours=1)  # the lease is fresh: only best-effort is healed
    assert (
        heal_account(harness.wiring.healing_store, kind.quota, harness.clock.now(), quiet).outcome is HealOutcome.HEALED
    )
    assert landed == [1]
    harness.check_invariants()


def test_a_dead_lease_settled_by_a_heal_is_settled_once(harness: Harness, kind: Kind, faults: Faults) -> None:
    kind.put(2)
    faults.crash_after_write("reserve")  # a slot held, no resource
    with pytest.raises(faults.SimulatedCrash):
        kind.create()
    # A heal settles a shard's dead leases together (`REMOVE #l0, ...`).
    landed = faults.lands_then_500("UpdateItem", lambda p: "REMOVE #l0" in faults.expression(p))
    later = harness.clock.now() + timedelta(minutes=2)  # the lease is older than `quiet`: its request is over
    outcome = heal_account(harness.wiring.healing_store, kind.quota, later, timedelta(seconds=60)).outcome
    assert outcome in (HealOutcome.EXACT, HealOutcome.HEALED)
    assert landed == [1]
    exact(harness, kind.quota, live=0)
    assert [kind.create().status for _ in range(3)] == [201, 201, 409]


# --- late invocations: the caller gave up (API Gateway answered 504) and may have retried ---------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "RESOURCES", {"name": "vm"}),
        ("PUT", "QUOTA", {"limit": 9}),
        ("DELETE", "RESOURCES/RESOURCE", None),
    ],
)
def test_an_invocation_older_than_the_integration_timeout_writes_nothing(
    harness: Harness, kind: Kind, method: str, path: str, body: object
) -> None:
    api = harness.api
    kind.put(5)
    resource_id = kind.create().json()["resourceId"]
    harness.pump()
    before = kind.truth()
    received = harness.clock.epoch_ms() - 30_000  # API Gateway gave up at 29 s
    url = path.replace("RESOURCES", kind.resources_url).replace("QUOTA", kind.url).replace("RESOURCE", resource_id)
    late = api.request(method, url, body, received_ms=received)
    assert late.status == 504
    assert late.json()["error"]["code"] == "GatewayTimeout"
    harness.pump()
    assert kind.truth() == before
    assert kind.read()["limit"] == 5


def test_a_late_keyed_create_after_its_retry_succeeded_and_the_resource_was_removed(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    """The first invocation is held just before its put while the caller's retry creates the
    resource, deletes it, and the consumer leaves a tombstone. Then the first put runs: it must not
    bring the resource back, and its reservation must be released. (Before: the put found no item
    and created the resource again.)"""
    api = harness.api
    kind.put(2)
    resource_id = idempotent_resource_id(kind.quota, "k1")
    retry: list[int] = []
    held = {"first": True}

    def the_caller_retries_and_deletes(params: dict) -> None:
        if not held.pop("first", False):
            return  # only the first invocation's put is held; the retry's own put goes through
        retry.append(kind.create("vm", key="k1").status)
        retry.append(kind.delete(resource_id).status)
        harness.pump()

    faults.before_call("PutItem", the_caller_retries_and_deletes)
    late = kind.create("vm", key="k1")
    assert retry == [201, 204]
    assert late.status == 409  # answered to nobody: the key's resource was deleted
    assert late.json()["error"]["code"] == "IdempotencyKeyReused"
    assert api.request("GET", f"{kind.resources_url}/{resource_id}").status == 404
    exact(harness, kind.quota, live=0)


def test_a_late_delete_after_its_retry_succeeded_gives_back_its_decrement(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    kind.put(5)
    resource_id = kind.create().json()["resourceId"]
    kind.create("keep")
    harness.pump()
    retry: list[int] = []
    held = {"first": True}

    def the_caller_retries(params: dict) -> None:
        if API_WRITES["take-deletion"][1](params) and held.pop("first", False):
            retry.append(kind.delete(resource_id).status)
            harness.pump()

    faults.before_call("UpdateItem", the_caller_retries)
    assert kind.delete(resource_id).status == 404  # answered to nobody
    assert retry == [204]
    exact(harness, kind.quota, live=1)


# --- resizes ---------------------------------------------------------------------------------------


@pytest.mark.engine
@pytest.mark.parametrize(("to", "then"), [(7, 2), (2, 6)], ids=["growth", "shrink"])
def test_a_resize_that_landed_and_was_resized_again_before_its_retry_is_never_given_back(
    harness: Harness, kind: Kind, faults: Faults, to: int, then: int
) -> None:
    """Our resize (4 -> `to`) lands and its answer is lost; meanwhile another caller resizes the
    resource again (`to` -> `then`, from our version), so the SDK's retry finds neither our version
    nor our token. Whether ours landed is hidden now: the resize must not give its lease back (a
    growth's units released under the resource that holds them, a shrink's decrement given back
    over units already freed); the lease stays, and a heal drops it on the safe side. (Before: the
    retry took the moved version for a resize that never landed and gave its lease back. Chaos,
    seed 11 with amounts: admitted 6 units below live after a growth; best-effort and admitted one
    above live, no lease left, after a shrink.)"""
    kind.put(20)
    made = harness.api.request("POST", kind.resources_url, {"name": "r", "amount": 4})
    assert made.status == 201, made.text
    url = f"{kind.resources_url}/{made.json()['resourceId']}"
    other: list[tuple[int, Any]] = []

    def another_caller_resizes() -> None:
        answer = harness.api.request("PATCH", url, {"amount": then})
        other.append((answer.status, answer.json().get("amount", 1)))

    landed = land_then_500(faults, "resize", another_caller_resizes)
    ours = harness.api.request("PATCH", url, {"amount": to})
    assert landed == [1]
    assert other == [(200, then)]  # made from our version: ours had landed
    harness.check_invariants()  # best-effort <= live <= admitted, at once
    assert ours.status == 503, ours.text  # its outcome is unknown: a careful caller reads again
    truth = kind.truth()
    assert (truth.live, truth.leases) == (then, 1)
    # The lease is dead once its request is certainly over: a heal drops it on the safe side (the
    # units held, best-effort low) and, on an account quiet since, sets both counters to the truth.
    harness.pump()
    later = harness.clock.now() + timedelta(minutes=2)
    outcome = heal_account(harness.wiring.healing_store, kind.quota, later, timedelta(seconds=60)).outcome
    assert outcome is HealOutcome.HEALED
    exact(harness, kind.quota, live=then)
