"""One test (or family) per guarantee of docs/guarantees.md, each able to fail.

Races are lined up with barriers inside botocore hooks, never with sleeps. Concurrent callers
call the same flows the handlers call (functions.core + the real adapters): a Lambda sandbox runs
one invocation at a time, and Powertools' resolver is not meant to be shared between threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from functions.core import accounts
from functions.core.counting import Outcome
from functions.core.errors import LimitExceeded
from functions.core.model import NewResource, Quota
from tests.handler.conftest import Harness, Kind
from tests.support.faults import Faults
from tests.support.stream import process_stream_records


def run_together(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run `work(i)` on `count` threads at once; returns results or raised exceptions."""

    def guarded(index: int) -> Any:
        try:
            return work(index)
        except Exception as error:
            return error

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(guarded, range(count)))


def hold_until(
    faults: Faults, parties: int, operation: str, matches: Callable[[dict[str, Any]], bool]
) -> threading.Barrier:
    """Make the first `parties` matching calls wait for each other just before they are sent."""
    barrier = threading.Barrier(parties, timeout=20)
    passed = [0]
    lock = threading.Lock()

    def wait(params: dict[str, Any]) -> None:
        if not matches(params):
            return
        with lock:
            if passed[0] >= parties:
                return
            passed[0] += 1
        barrier.wait()

    faults.before_call(operation, wait)
    return barrier


# --- Invariant 1: eventual exactness ------------------------------------------------------------


def test_eventual_equals_processed_resources_at_every_step(harness: Harness, kind: Kind) -> None:
    kind.put(10)
    ids = [kind.create(f"r{i}").json()["resourceId"] for i in range(4)]
    for one in harness.tap.drain():  # one record at a time, checking after each
        assert harness.deliver([one]) == []
        harness.check_invariants()
    kind.delete(ids[0])
    kind.delete(ids[1])
    for one in harness.tap.drain():
        assert harness.deliver([one]) == []
        harness.check_invariants()
    harness.pump()
    truth = kind.truth()
    assert truth.eventual == truth.live == 2
    assert truth.existing == 2  # soft-deleted resources were hard-deleted


# --- Invariant 2: best-effort never overcounts -------------------------------------------------

CREATE_WRITES = ["reserve", "put", "commit"]
DELETE_WRITES = ["take-deletion", "soft-delete", "finish-deletion"]


@pytest.mark.parametrize("write", CREATE_WRITES)
def test_create_crashing_after_any_write_never_overcounts(
    harness: Harness, kind: Kind, write: str, faults: Faults
) -> None:
    kind.put(5)
    kind.create("existing")
    faults.crash_after_write(write)
    with pytest.raises(faults.SimulatedCrash):
        kind.create("vm", key="req-1")
    harness.check_invariants()

    retried = kind.create("vm", key="req-1")  # the client retries with its key
    # 201 if the crash came before the resource was put (this retry creates it); 200 if it was
    # put (this retry finds its own resource, and finishes what the crash left).
    assert retried.status == (201 if write == "reserve" else 200), retried.text
    harness.check_invariants()
    harness.pump()
    harness.check_invariants()
    truth = kind.truth()
    assert truth.live == truth.eventual == 2  # the retry never created a second resource


@pytest.mark.parametrize("write", CREATE_WRITES)
def test_create_retried_without_a_key_creates_another_resource_and_never_overcounts(
    harness: Harness,
    kind: Kind,
    write: str,
    faults: Faults,
) -> None:
    kind.put(5)
    faults.crash_after_write(write)
    with pytest.raises(faults.SimulatedCrash):
        kind.create("vm")
    assert kind.create("vm").status == 201
    harness.pump()
    harness.check_invariants()
    truth = kind.truth()
    assert truth.eventual == truth.live  # one or two resources, each counted exactly once


@pytest.mark.parametrize("write", DELETE_WRITES)
def test_delete_crashing_after_any_write_never_overcounts(
    harness: Harness, kind: Kind, write: str, faults: Faults
) -> None:
    api = harness.api
    kind.put(5)
    keep = kind.create("keep").json()["resourceId"]
    doomed = kind.create("doomed").json()["resourceId"]
    harness.pump()
    faults.crash_after_write(write)
    with pytest.raises(faults.SimulatedCrash):
        kind.delete(doomed)
    harness.check_invariants()

    retried = kind.delete(doomed)  # the client retries
    # 204 if the crash came before the soft delete (this retry deletes it); 404 once it was deleted.
    assert retried.status == (204 if write == "take-deletion" else 404), retried.text
    harness.check_invariants()
    harness.pump()
    truth = kind.truth()
    assert truth.live == truth.eventual == 1
    assert api.request("GET", f"{kind.resources_url}/{keep}").status == 200


@pytest.mark.parametrize("write", CREATE_WRITES + DELETE_WRITES)
def test_a_write_that_lands_but_times_out_never_overcounts(
    harness: Harness, kind: Kind, write: str, faults: Faults
) -> None:
    kind.put(5)
    resource_id = kind.create("vm").json()["resourceId"]
    faults.time_out_after(*faults.API_WRITES[write])
    kind.create("other")
    kind.delete(resource_id)
    harness.check_invariants()
    harness.pump()
    harness.check_invariants()


@pytest.mark.engine
def test_concurrent_deletes_of_one_resource_never_overcount(harness: Harness, kind: Kind, faults: Faults) -> None:
    kind.put(5)
    resource_id = kind.create().json()["resourceId"]
    hold_until(faults, 2, *faults.API_WRITES["take-deletion"])
    store = harness.wiring.api_store
    results = run_together(
        2, lambda _: accounts.delete_resource(store, kind.quota, resource_id, harness.clock.timestamp)
    )
    assert sum(result is None for result in results) == 1  # one delete won, the other is a 404
    harness.check_invariants()
    assert kind.read()["bestEffort"] == 0


def test_delete_landing_before_the_create_counts_it_never_overcounts(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    """A delete that completes while its create is between the put and the increment.

    The decrement lands before the increment it cancels. Stored clamped at zero it would be lost
    and the late increment would leave best-effort at 1 with nothing live: it is stored signed."""
    api = harness.api
    kind.put(5)
    raced = []

    def delete_first(params: dict[str, Any]) -> None:
        if faults.API_WRITES["commit"][1](params) and not raced:
            page = api.request("GET", kind.resources_url).json()
            raced.append(kind.delete(page["items"][0]["resourceId"]).status)

    faults.before_call("UpdateItem", delete_first)
    assert kind.create().status == 201
    assert raced == [204]
    harness.check_invariants()
    assert kind.read()["bestEffort"] == 0
    assert kind.truth().live == 0


def test_duplicate_deliveries_leave_best_effort_alone(harness: Harness, kind: Kind) -> None:
    kind.put(5)
    kind.create()
    records = harness.tap.drain()
    harness.deliver(records)
    harness.deliver(records)
    assert kind.read()["bestEffort"] == 1
    harness.check_invariants()


# --- Invariant 3: at most once, at least once -------------------------------------------------


def test_a_record_delivered_twice_counts_once(harness: Harness, kind: Kind) -> None:
    kind.put(5)
    kind.create()
    records = harness.tap.drain()
    assert harness.deliver(records) == []
    assert harness.deliver(records) == []
    assert kind.read()["eventual"] == 1


@pytest.mark.engine
def test_a_record_delivered_twice_concurrently_counts_once(harness: Harness, kind: Kind, faults: Faults) -> None:
    kind.put(5)
    kind.create()
    records = harness.tap.drain()
    hold_until(faults, 2, "TransactWriteItems", lambda _: True)  # both transactions in flight together
    store = harness.wiring.counting_store
    reports = run_together(2, lambda _: process_stream_records(store, records))
    assert sorted(report.outcomes[Outcome.APPLIED] for report in reports) == [0, 1]
    assert sorted(report.outcomes[Outcome.ALREADY_DONE] for report in reports) == [0, 1]
    assert kind.read()["eventual"] == 1
    harness.check_invariants()


def test_an_insert_replayed_after_its_delete_was_processed_is_ignored(harness: Harness, kind: Kind) -> None:
    kind.put(5)
    resource_id = kind.create().json()["resourceId"]
    inserts = harness.tap.drain()
    harness.deliver(inserts)
    kind.delete(resource_id)
    harness.pump()
    assert kind.truth().existing == 0
    assert harness.deliver(inserts) == []  # late replay, as from DLQ 1
    assert kind.read()["eventual"] == 0
    harness.check_invariants()


def test_a_delete_whose_create_was_never_counted_cancels_it(harness: Harness, kind: Kind) -> None:
    kind.put(5)
    resource_id = kind.create().json()["resourceId"]
    kind.delete(resource_id)
    records = harness.tap.drain()
    deletes = [r for r in records if r["eventName"] == "MODIFY"]
    assert harness.deliver(deletes) == []  # the delete arrives first (out of order)
    harness.check_invariants()
    assert kind.truth().existing == 0
    assert harness.deliver(records) == []  # then everything, the INSERT included
    assert kind.read()["eventual"] == 0
    harness.check_invariants()


def test_a_failed_record_is_reported_alone_and_counts_once_when_retried(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    kind.put(5)
    kind.create("first")
    kind.create("second")
    records = [r for r in harness.tap.drain() if r["dynamodb"]["Keys"]["sk"]["S"].startswith("RESOURCE#")]
    second = records[1]
    second_id = second["dynamodb"]["Keys"]["sk"]["S"]
    # Both records' actions go in one transaction: [first, second, the counter's ADD of 2].
    faults.answer_instead(
        "TransactWriteItems",
        lambda params: any(item["Update"]["Key"]["sk"]["S"] == second_id for item in params["TransactItems"]),
        faults.transaction_cancelled("None", "TransactionConflict", "None"),
    )
    assert harness.deliver(records) == [second["dynamodb"]["SequenceNumber"]]  # first went again, alone
    assert kind.read()["eventual"] == 1
    harness.check_invariants()
    retry_from = records.index(second)  # Lambda retries from the lowest failed sequence number
    assert harness.deliver(records[retry_from:]) == []
    assert kind.read()["eventual"] == 2


@pytest.mark.parametrize(
    "codes",
    [("TransactionConflict", "None"), ("None", "ThrottlingError"), ("None", "ProvisionedThroughputExceeded")],
)
def test_every_cancellation_but_our_own_condition_is_retried(
    harness: Harness, kind: Kind, codes: tuple[str, str], faults: Faults
) -> None:
    kind.put(5)
    kind.create()
    records = harness.tap.drain()
    faults.answer_instead("TransactWriteItems", lambda _: True, faults.transaction_cancelled(*codes))
    insert = next(r for r in records if r["eventName"] == "INSERT" and "RESOURCE#" in r["dynamodb"]["Keys"]["sk"]["S"])
    with pytest.raises(Exception, match="All records failed processing"):
        harness.deliver([insert])  # a batch whose every record failed is a function error (bisect)
    assert kind.read()["eventual"] == 0
    assert harness.deliver([insert]) == []
    assert kind.read()["eventual"] == 1


# --- Invariant 4: no new API errors ------------------------------------------------------------


def test_a_quiet_accounts_api_path_never_runs_a_transaction(harness: Harness, kind: Kind, faults: Faults) -> None:
    """A one-shard account (every account until it is busy) admits, counts and refuses with single
    conditional writes. Only moving room between a busy account's shards is a transaction."""
    kind.put(3)  # a new account's (or type's) first PUT creates its item: no transaction either
    called: list[str] = []
    for operation in ("TransactWriteItems", "TransactGetItems", "ExecuteTransaction"):
        faults.before_call(operation, lambda _, name=operation: called.append(name))
    api = harness.api
    ids = [kind.create(key=f"k{i}").json()["resourceId"] for i in range(3)]
    kind.create(key="k0")
    kind.create()  # 409
    api.request("GET", kind.resources_url)
    api.request("GET", f"{kind.resources_url}/{ids[0]}")
    kind.delete(ids[0])
    kind.read()
    assert called == []


# --- Invariant 5: the limit holds under concurrency ---------------------------------------------


@pytest.mark.engine
@pytest.mark.parametrize(("limit", "existing", "racers"), [(5, 3, 8), (1, 0, 6)])
def test_concurrent_creates_never_exceed_the_limit(
    harness: Harness, kind: Kind, limit: int, existing: int, racers: int, faults: Faults
) -> None:
    kind.put(limit)
    for _ in range(existing):
        kind.create()
    # Every racer is about to send its reservation before any of them has: the single conditional
    # update must still let exactly the free slots through.
    hold_until(faults, racers, *faults.API_WRITES["reserve"])
    store = harness.wiring.api_store
    results = run_together(
        racers,
        lambda i: accounts.create_resource(
            store, kind.quota, NewResource(name=f"racer-{i}"), None, harness.clock.timestamp
        ),
    )
    admitted = [r for r in results if isinstance(r, accounts.Created)]
    refused = [r for r in results if isinstance(r, LimitExceeded)]
    assert len(admitted) == limit - existing
    assert len(refused) == racers - len(admitted)
    truth = kind.truth()
    assert truth.live == limit
    harness.check_invariants()


@pytest.mark.engine
@pytest.mark.parametrize("racers", [6])
def test_concurrent_creates_of_two_types_each_fill_exactly_their_own_limit(
    harness: Harness, racers: int, faults: Faults
) -> None:
    """Racers of the default type and of two others, every reservation held until all are about
    to be sent: each type admits exactly its own free slots, and takes none of a sibling's."""
    limits = {Quota("acme"): 2, Quota("acme", "seats"): 3, Quota("acme", "projects"): 1}
    harness.api.put_account("acme", 2)
    harness.api.put_type("acme", "seats", 3)
    harness.api.put_type("acme", "projects", 1)
    quotas = [quota for quota in limits for _ in range(racers)]
    hold_until(faults, len(quotas), *faults.API_WRITES["reserve"])
    store = harness.wiring.api_store
    results = run_together(
        len(quotas),
        lambda i: accounts.create_resource(
            store, quotas[i], NewResource(name=f"racer-{i}"), None, harness.clock.timestamp
        ),
    )
    for quota, limit in limits.items():
        mine = [result for index, result in enumerate(results) if quotas[index] == quota]
        assert sum(isinstance(result, accounts.Created) for result in mine) == limit, quota
        assert sum(isinstance(result, LimitExceeded) for result in mine) == racers - limit, quota
        assert harness.truth(quota).live == limit
    harness.pump()
    harness.check_invariants()
    for quota, limit in limits.items():
        assert harness.truth(quota).eventual == limit


def test_a_delete_of_one_type_frees_only_its_own_slot(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 1)
    api.put_type("acme", "seats", 1)
    default = api.create("acme").json()["resourceId"]
    seat = api.create("acme", resource_type="seats").json()["resourceId"]
    # The same id on the other type's routes is not its resource: nothing freed there.
    assert api.delete("acme", seat).status == 404
    assert api.delete("acme", default, resource_type="seats").status == 404
    assert (api.create("acme").status, api.create("acme", resource_type="seats").status) == (409, 409)
    assert api.delete("acme", seat, resource_type="seats").status == 204
    assert (api.create("acme").status, api.create("acme", resource_type="seats").status) == (409, 201)
    harness.pump()
    harness.check_invariants()


# --- Invariant 6: self-healing when an account empties -----------------------------------------


def test_both_counters_return_to_zero_when_every_resource_is_deleted(
    harness: Harness, kind: Kind, faults: Faults
) -> None:
    kind.put(10)
    ids = [kind.create().json()["resourceId"] for _ in range(4)]
    faults.crash_after_write("take-deletion")  # one delete decrements twice
    with pytest.raises(faults.SimulatedCrash):
        kind.delete(ids[0])
    for resource_id in ids:
        kind.delete(resource_id)
    harness.pump()
    account = kind.read()
    assert (account["bestEffort"], account["eventual"], account["used"]) == (0, 0, 0)
    harness.check_invariants()
