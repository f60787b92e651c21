"""Healing against the emulator, through the interleavings docs/healing.md names (docs/guarantees.md, 6).

Each adversarial test lines an API call or a consumer step up inside the heal with a botocore
hook, and would fail (best-effort above the live count, or admitted below it) without the guard
it names.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from functions.adapters import keys, table_layout
from functions.core import accounts
from functions.core.counting import LimitChangedRecord, Outcome
from functions.core.healing import HealOutcome, heal_account
from functions.core.leases import iso_timestamp
from functions.core.model import NewResource, Quota
from functions.core.sweeper import SweepReport, SweepSettings, sweep
from functions.shared.clock import EPOCH
from tests.handler.conftest import Harness, Kind
from tests.support.faults import Faults, expression

ACME = Quota("acme")
SEATS = Quota("acme", "seats")
BUSY = Quota("busy")

QUIET_NOW = timedelta(0)  # every write counts as old: both counters may be healed
NOT_QUIET = timedelta(hours=1)  # every write counts as recent: only best-effort may be healed


def heal(harness: Harness, quota: str | Quota, quiet: timedelta) -> HealOutcome:
    quota = quota if isinstance(quota, Quota) else Quota(quota)
    return heal_account(harness.wiring.healing_store, quota, harness.clock.now(), quiet).outcome


def sweep_at(harness: Harness, now: datetime, settings: SweepSettings, audit: bool = False) -> SweepReport:
    """A sweep of the harness's table at `now`, on the stores the sweeper's handler gives it."""
    wiring = harness.wiring
    return sweep(
        counting=wiring.counting_store,
        pending=wiring.counting_store,
        healing=wiring.healing_store,
        activity=wiring.healing_store,
        now=now,
        settings=settings,
        audits=wiring.audit_reads if audit else None,
    )


def once(matches: Any, action: Any) -> Any:
    """A hook action run on the first matching call only (so not again on the calls it makes)."""
    state = {"done": False}

    def run(params: dict[str, Any]) -> None:
        if state["done"] or not matches(params):
            return
        state["done"] = True
        action()

    return run


def test_heal_restores_a_lost_increment_and_a_held_slot(harness: Harness, kind: Kind, faults: Faults) -> None:
    kind.put(3)
    faults.crash_after("PutItem")  # created, never counted by best-effort
    with pytest.raises(faults.SimulatedCrash):
        kind.create()
    faults.crash_after_write("reserve")  # a slot held, no resource
    with pytest.raises(faults.SimulatedCrash):
        kind.create()
    harness.pump()
    before = kind.truth()
    assert (before.live, before.best_effort, before.admitted) == (1, 0, 2)

    assert heal(harness, kind.quota, QUIET_NOW) is HealOutcome.HEALED
    after = kind.truth()
    assert (after.best_effort_net, after.admitted, after.eventual) == (1, 1, 1)
    assert [kind.create().status for _ in range(3)] == [201, 201, 409]  # the held slot is free again
    harness.check_invariants()


def test_a_recently_written_account_keeps_its_held_slots(harness: Harness, kind: Kind, faults: Faults) -> None:
    kind.put(3)
    faults.crash_after_write("reserve")
    with pytest.raises(faults.SimulatedCrash):
        kind.create()
    assert heal(harness, kind.quota, NOT_QUIET) is HealOutcome.EXACT  # best-effort is right; admitted must wait
    assert kind.truth().admitted == 1


def test_heal_waits_while_counting_work_is_pending(harness: Harness, kind: Kind) -> None:
    kind.put(3)
    kind.create()  # not yet applied by the consumer
    assert heal(harness, kind.quota, QUIET_NOW) is HealOutcome.PENDING_WORK
    harness.pump()
    assert heal(harness, kind.quota, QUIET_NOW) is HealOutcome.EXACT


@pytest.mark.engine
def test_heal_waits_for_a_delete_in_flight(harness: Harness, faults: Faults) -> None:
    """Decremented, not yet soft-deleted: healing best-effort to the eventual count now would erase
    a decrement the delete may still give back (overcount) or follow with its soft delete."""
    api = harness.api
    api.put_account("acme", 3)
    resource_id = api.create("acme").json()["resourceId"]
    harness.pump()
    faults.crash_after_write("take-deletion")  # the delete stops after its decrement
    with pytest.raises(faults.SimulatedCrash):
        api.delete("acme", resource_id)
    assert heal(harness, "acme", NOT_QUIET) is HealOutcome.PENDING_WORK  # a fresh lease: the delete may go on
    assert harness.truth("acme").best_effort == 0
    # A lease older than `quiet`: that delete died before its soft delete, so its decrement is given back.
    assert heal(harness, "acme", QUIET_NOW) is HealOutcome.HEALED
    truth = harness.truth("acme")
    assert (truth.best_effort, truth.admitted, truth.live, truth.leases) == (1, 1, 1, 0)


def test_a_decrement_between_the_heals_reads_and_write_makes_it_retry(harness: Harness, faults: Faults) -> None:
    api = harness.api
    api.put_account("acme", 3)
    ids = [api.create("acme").json()["resourceId"]]
    faults.crash_after("PutItem")  # drift: a resource best-effort never counted, so the heal writes
    with pytest.raises(faults.SimulatedCrash):
        api.create("acme")
    harness.pump()

    def delete_now() -> None:
        assert api.delete("acme", ids[0]).status == 204

    faults.before_call("UpdateItem", once(lambda p: "heal_epoch" in expression(p), delete_now))
    assert heal(harness, "acme", NOT_QUIET) is HealOutcome.BUSY  # the version moved: the write was refused
    harness.check_invariants()


@pytest.mark.engine
def test_a_create_in_flight_across_a_heal_does_not_count_twice(harness: Harness, faults: Faults) -> None:
    """Reserved before the heal, put and counted by the stream, then healed: the late increment
    must be skipped (heal epoch), or best-effort would count the resource twice."""
    api = harness.api
    api.put_account("acme", 3)
    outcomes: list[HealOutcome] = []

    def count_and_heal() -> None:
        harness.pump()
        outcomes.append(heal(harness, "acme", NOT_QUIET))

    faults.before_call("UpdateItem", once(faults.API_WRITES["commit"][1], count_and_heal))
    assert api.create("acme").status == 201
    assert outcomes == [HealOutcome.HEALED]  # best-effort went 0 -> 1 by the heal
    truth = harness.truth("acme")
    assert (truth.best_effort, truth.live) == (1, 1)  # and the increment did not add another
    harness.check_invariants()


def test_a_removal_between_the_heals_reads_makes_it_retry(harness: Harness, faults: Faults) -> None:
    """The first read counts a soft-deleted resource; the consumer removes it before the pending
    check sees it. Only the second read shows the count moved; without it best-effort := 1 with
    nothing live."""
    api = harness.api
    api.put_account("acme", 3)
    resource_id = api.create("acme").json()["resourceId"]
    harness.pump()
    api.delete("acme", resource_id)  # soft-deleted, still counted by `eventual`
    faults.before_call("Query", once(lambda _: True, harness.pump))  # the pending check runs after it
    assert heal(harness, "acme", NOT_QUIET) is HealOutcome.BUSY
    harness.check_invariants()
    assert heal(harness, "acme", QUIET_NOW) in (HealOutcome.EXACT, HealOutcome.HEALED)
    assert harness.api.account("acme")["bestEffort"] == 0


@pytest.mark.parametrize("resource_type", [None, "seats"])
def test_the_sweeper_applies_old_pending_work_and_heals_quiet_accounts(
    harness: Harness, faults: Faults, resource_type: str | None
) -> None:
    """On the default type, or on a type of one account beside its default type: the sweeper finds
    each quota from the activity index's keys, and heals each on its own."""
    api = harness.api
    api.put_account("acme", 5)
    if resource_type:
        api.put_type("acme", resource_type, 5)
    api.put_account("calm", 5)
    faults.crash_after("PutItem")
    with pytest.raises(faults.SimulatedCrash):
        api.create("acme", resource_type=resource_type)  # the stream is never applied: only the sweeper works
    api.create("calm")
    settings = SweepSettings(pending_older_than=timedelta(0), quiet=timedelta(0), lookback=timedelta(hours=1))

    report = sweep_at(harness, harness.clock.now(), settings)
    assert sum(report.pending.outcomes.values()) == 2
    assert report.pending.failed == []
    assert report.heals[HealOutcome.HEALED] == 1  # acme (or its type): best-effort 0 -> 1
    # calm, and acme's default type beside its other type: nothing to change, noted as checked.
    assert report.heals[HealOutcome.EXACT] == (2 if resource_type else 1)
    url = f"/accounts/acme/types/{resource_type}" if resource_type else "/accounts/acme"
    account = api.request("GET", url).json()
    assert (account["bestEffort"], account["eventual"]) == (1, 1)
    assert api.account("acme")["bestEffort"] == (0 if resource_type else 1)

    again = sweep_at(harness, harness.clock.now(), settings)
    assert sum(again.pending.outcomes.values()) == 0
    # Neither account was written since. Checked within their last write's minute (quiet is 0
    # here), they may be checked once more: the index knows that write only to the minute.
    assert again.heals[HealOutcome.HEALED] == 0
    after_that_minute = harness.clock.now() + timedelta(minutes=2)
    sweep_at(harness, after_that_minute, settings)
    last = sweep_at(harness, after_that_minute + timedelta(seconds=1), settings)
    assert sum(last.heals.values()) == 0
    harness.check_invariants()


def test_the_sweeper_decides_a_limit_change_the_stream_never_delivered(harness: Harness) -> None:
    """A lowered limit's crossings are decided by the sweep that finds its outbox item pending,
    once it is old enough, and that sweep takes it out of the pending index."""
    from tests.handler.test_usage_thresholds import create, crossings

    harness.api.put_account("acme", 5)
    create(harness, 4)
    harness.pump()
    harness.api.put_account("acme", 3)
    harness.tap.drain()  # its records are lost
    changed_at = harness.clock.now()
    settings = SweepSettings(pending_older_than=timedelta(minutes=5), quiet=NOT_QUIET, lookback=timedelta(hours=1))

    assert sum(sweep_at(harness, changed_at + timedelta(minutes=4), settings).pending.outcomes.values()) == 0
    assert crossings(harness) == [(80, "up", 4)]  # not yet: the stream may still deliver it
    report = sweep_at(harness, changed_at + timedelta(minutes=6), settings)
    assert report.pending.outcomes[Outcome.APPLIED] == 1
    assert crossings(harness) == [(80, "up", 4), (100, "up", 4)]
    assert list(harness.wiring.counting_store.pending_records(None)) == []
    harness.pump()  # the settling's own stream record is no change
    assert crossings(harness) == [(80, "up", 4), (100, "up", 4)]


def test_a_decided_limit_change_leaves_the_pending_index(harness: Harness) -> None:
    harness.api.put_account("acme", 5)
    harness.api.put_account("acme", 3)
    assert [record for _, record in harness.wiring.counting_store.pending_records(None)] == [
        LimitChangedRecord(Quota("acme"), 2)  # the first limit was version 1
    ]
    harness.pump()
    assert list(harness.wiring.counting_store.pending_records(None)) == []


@pytest.mark.engine
def test_a_busy_account_gets_the_slots_of_crashed_creates_back_within_a_sweep(harness: Harness, faults: Faults) -> None:
    """Creates die between reserving their slot and putting their resource, on an account written
    every 100 ms, which never goes quiet. One sweep after the leases are older than `quiet` (one
    sweep period at most: the bound, docs/healing.md) every slot is back, and the account then
    admits exactly its limit."""
    api = harness.api
    api.put_account("busy", 4)
    two_minutes_ago = harness.clock.timestamp(-timedelta(minutes=2))
    faults.crash_after_write("reserve")
    faults.crash_after_write("reserve")
    for _ in range(2):
        with pytest.raises(faults.SimulatedCrash):
            # Through the API's own flow, with a clock two minutes back: leases older than `quiet`.
            accounts.create_resource(
                harness.wiring.api_store,
                BUSY,
                NewResource("lost"),
                None,
                lambda: two_minutes_ago,
            )
    stop, written = threading.Event(), threading.Event()

    def keep_writing() -> None:  # a create and a delete every 100 ms: never quiet
        while not stop.wait(0.1):
            created = api.create("busy")
            written.set()
            if created.status == 201:
                api.delete("busy", created.json()["resourceId"])

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        # Sweep once the account has a write within `quiet`: until then it is still one written
        # two minutes ago, which a heal visits (a slow machine lost that race after a fixed 0.5 s).
        assert written.wait(30), "the writer's first create was never answered"
        report = sweep_at(harness, harness.clock.now(), SweepSettings())
        assert (report.busy_accounts, report.dead_leases) == (1, 2)
        assert sum(report.heals.values()) == 0  # not quiet: no heal, only its dead leases
    finally:
        stop.set()
        writer.join()
    harness.pump()
    answers = [api.create("busy").status for _ in range(5)]
    assert answers == [201, 201, 201, 201, 409]
    harness.check_invariants()


@pytest.mark.engine
def test_a_write_that_sees_many_dead_leases_on_its_shard_settles_them(harness: Harness, faults: Faults) -> None:
    """Requests that died between their two shard writes (a throttled shard answers many such)
    leave their leases, and each makes every write of the shard larger. The next write that sees
    four or more dead ones settles them with one write, as the sweeper would: the slots of creates
    that never put come back, a delete that landed frees its slot, one that did not gives back its
    decrement, and the account then admits exactly its limit."""
    api, store = harness.api, harness.wiring.api_store
    api.put_account("acme", 6)
    doomed = api.create("acme").json()["resourceId"]
    two_minutes_ago = harness.clock.timestamp(-timedelta(minutes=2))

    def died_after(write: str, request: Any) -> None:
        faults.crash_after_write(write)
        with pytest.raises(faults.SimulatedCrash):
            request(lambda: two_minutes_ago)

    for _ in range(2):
        died_after("reserve", lambda clock: accounts.create_resource(store, ACME, NewResource("lost"), None, clock))
    died_after("put", lambda clock: accounts.create_resource(store, ACME, NewResource("uncounted"), None, clock))
    [uncounted] = [r.resource_id for r in store.list_resources(ACME, 10, None).items if r.name == "uncounted"]
    died_after("soft-delete", lambda clock: accounts.delete_resource(store, ACME, doomed, clock))
    died_after("take-deletion", lambda clock: accounts.delete_resource(store, ACME, uncounted, clock))
    assert len(account_leases(harness)) == 5

    assert api.create("acme").status == 201  # sees the five, and settles them after its own work
    assert account_leases(harness) == ()
    harness.pump()
    harness.check_invariants()
    # Live: `uncounted` and the create above. Every other slot is free again.
    assert [api.create("acme").status for _ in range(5)] == [201, 201, 201, 201, 409]
    harness.check_invariants()


def test_a_full_account_gets_the_slots_of_dead_creates_back_on_its_next_create(
    harness: Harness, faults: Faults
) -> None:
    """Creates that died after reserving hold their slots until their leases are settled. A create
    that finds the account full settles the dead ones its refusal read showed, and is admitted:
    the tenant does not wait for the sweeper. Leases that are not dead yet keep their slots."""
    api, store = harness.api, harness.wiring.api_store
    for account_id, age in (("acme", timedelta(minutes=2)), ("globex", timedelta(seconds=5))):
        api.put_account(account_id, 2)
        taken = harness.clock.timestamp(-age)
        for _ in range(2):
            faults.crash_after_write("reserve")
            with pytest.raises(faults.SimulatedCrash):
                accounts.create_resource(store, Quota(account_id), NewResource("lost"), None, lambda taken=taken: taken)
    assert [api.create("acme").status for _ in range(3)] == [201, 201, 409]
    assert [api.create("globex").status for _ in range(2)] == [409, 409]  # its requests may still run
    harness.pump()
    harness.check_invariants()


@pytest.mark.engine
def test_dead_leases_settled_together_leave_out_those_another_writer_settled(harness: Harness, faults: Faults) -> None:
    """Two writers that saw the same dead leases: the second's condition fails on the lease the
    first settled, and it settles the others, each once."""
    from functions.core.leases import RELEASE_RESERVATION

    api, store = harness.api, harness.wiring.api_store
    api.put_account("acme", 3)
    long_ago = harness.clock.timestamp(-timedelta(minutes=2))
    for _ in range(3):
        faults.crash_after_write("reserve")
        with pytest.raises(faults.SimulatedCrash):
            accounts.create_resource(store, ACME, NewResource("lost"), None, lambda: long_ago)
    held = account_leases(harness)
    store.settle(ACME, held[1], RELEASE_RESERVATION, None)  # the first writer, on one of them
    assert store.settle_together(ACME, 0, dict.fromkeys(held, RELEASE_RESERVATION)) == 2
    assert account_leases(harness) == ()
    assert store.settle_together(ACME, 0, dict.fromkeys(held, RELEASE_RESERVATION)) == 0  # a replay
    assert [api.create("acme").status for _ in range(4)] == [201, 201, 201, 409]  # each slot freed once
    harness.check_invariants()


def account_leases(harness: Harness) -> tuple[Any, ...]:
    from functions.adapters.account_item import held_leases
    from functions.adapters.attributes import from_attributes
    from functions.adapters.shards import account_key

    backend = harness.backend
    item = backend.dynamodb.get_item(TableName=backend.table, Key=account_key(ACME), ConsistentRead=True)["Item"]
    return held_leases(from_attributes(item))


def test_an_account_written_while_the_sweep_runs_is_still_visited(harness: Harness, faults: Faults) -> None:
    """A sweep reads its clock once, at its start. A write that lands after that, in the next
    minute, stamps the account's activity entry two minutes past the sweep's time (stamps are
    rounded up to the minute): the sweep must still find the account and settle its dead leases."""
    api = harness.api
    api.put_account("busy", 4)
    boundary = harness.clock.now().replace(second=0, microsecond=0) - timedelta(minutes=30)

    def at(moment: datetime) -> Any:
        return lambda: iso_timestamp(moment)

    faults.crash_after_write("reserve")
    faults.crash_after_write("reserve")
    for _ in range(2):
        with pytest.raises(faults.SimulatedCrash):
            accounts.create_resource(
                harness.wiring.api_store, BUSY, NewResource("lost"), None, at(boundary - timedelta(minutes=2))
            )
    # The write that lands while the sweep runs: 100 ms into the minute after the sweep's start.
    accounts.create_resource(
        harness.wiring.api_store, BUSY, NewResource("late"), None, at(boundary + timedelta(milliseconds=100))
    )
    report = sweep_at(harness, boundary - timedelta(milliseconds=50), SweepSettings())
    assert (report.busy_accounts, report.dead_leases) == (1, 2)
    assert sum(report.heals.values()) == 0
    harness.pump()
    answers = [api.create("busy").status for _ in range(4)]
    assert answers == [201, 201, 201, 409]  # 4 slots: the late create's and three free ones
    harness.check_invariants()


# Times the drift test writes at: when it failed on the wall clock (2026-11-25 07:49 UTC), the end
# of that failing hour, the day's other failing hour (18:55), the failure of an earlier version
# (03:17), noon and the day's last second: spread over the day and the cycle of activity buckets.
AUDIT_TEST_TIMES = [
    "2026-11-25T07:49:00Z",
    "2026-11-25T08:44:30Z",
    "2026-11-25T18:55:00Z",
    "2026-11-25T03:17:00Z",
    "2026-11-25T12:00:00Z",
    "2026-11-25T23:59:59Z",
]


@pytest.mark.parametrize(
    ("written_at", "audited"), [(when, ACME) for when in AUDIT_TEST_TIMES] + [(AUDIT_TEST_TIMES[0], SEATS)]
)
def test_each_sweep_audits_one_activity_bucket_and_reports_drift(
    harness: Harness, written_at: str, audited: Quota
) -> None:
    """The sweeper's audit slice (functions/core/sweeper.py): at the time whose slice is a
    quota's activity bucket, the quota is audited; a nudged eventual counter is reported, for a
    type of an account as for its default type (a type's bucket is its own)."""
    from functions.adapters.attributes import to_attributes
    from functions.core.leases import parse_timestamp
    from functions.core.sweeper import AUDIT_SLICE

    harness.clock.set(parse_timestamp(written_at))
    api = harness.api
    api.put_account("acme", 5)
    api.create("acme")
    if not audited.is_default:
        api.put_type("acme", audited.resource_type, 5)
        api.create("acme", resource_type=audited.resource_type)
        assert keys.activity_bucket(audited) != keys.activity_bucket(ACME)  # so the next slice is not acme's
    harness.pump()
    key = {table_layout.PARTITION_KEY: keys.account_pk(audited), table_layout.SORT_KEY: keys.COUNTER_SORT_KEY}
    harness.backend.dynamodb.update_item(
        TableName=harness.backend.table,
        Key=to_attributes(key),
        UpdateExpression="ADD #count :one",
        ExpressionAttributeNames={"#count": "count"},
        ExpressionAttributeValues=to_attributes({":one": 1}),
    )
    # The sweep runs 1 s into the next slice of acme's bucket: within a cycle of the buckets
    # (128 x 5 min, 10 h 40 min) after the write, which a quiet period of two cycles keeps recent,
    # so the sweep only audits and never first heals the nudged counter into the other two (a
    # sweep a cycle later would heal it when the write came 2 h 25 min to 3 h 25 min into a cycle).
    bucket = int(keys.activity_bucket(audited).split("#")[1])
    cycle = AUDIT_SLICE * keys.ACTIVITY_BUCKET_COUNT
    first_slice = EPOCH + bucket * AUDIT_SLICE  # acme's, in the epoch's cycle
    when = first_slice + ((harness.clock.now() - first_slice) // cycle + 1) * cycle + timedelta(seconds=1)
    settings = SweepSettings(quiet=2 * cycle)
    report = sweep_at(harness, when, settings, audit=True)
    assert report.audits["drift"] == 1
    [finding] = report.drifted
    assert (finding.quota, finding.problems) == (audited, ("eventual 2 but 1 counted units",))
    other = sweep_at(harness, when + AUDIT_SLICE, settings, audit=True)
    assert "drift" not in other.audits  # the next slice is another bucket


@pytest.mark.engine
def test_the_sweepers_reads_follow_every_page(harness: Harness, faults: Faults) -> None:
    """DynamoDB ends a Query's page at 1 MB; here every Query is cut to one item a page. A heal
    still finds the pending resource that sorts after four counted ones, and the audit still counts
    all five."""
    from functions.core.model import idempotent_resource_id

    api = harness.api
    api.put_account("acme", 10)
    counted = {api.create("acme").json()["resourceId"] for _ in range(4)}
    harness.pump()
    key = next(f"k{n}" for n in range(10_000) if idempotent_resource_id(ACME, f"k{n}") > max(counted))
    assert api.create("acme", key=key).status == 201  # pending: sorts after every counted one
    faults.before_call("Query", lambda params: params.update(Limit=1))

    assert heal(harness, "acme", QUIET_NOW) is HealOutcome.PENDING_WORK
    harness.pump()
    assert heal(harness, "acme", QUIET_NOW) is HealOutcome.EXACT
    view = harness.wiring.audit_reads.recount(ACME)
    assert view is not None
    assert (view.live, view.counted, view.eventual) == (5, 5, 5)


def test_a_sweep_reads_the_pending_index_in_one_scan_whatever_its_bucket_count(
    harness: Harness, faults: Faults
) -> None:
    """The pending index spreads its writes over PENDING_BUCKET_COUNT keys; a sweep Scans it (it
    holds only pending work) instead of making a Query per bucket: one call for a small index."""
    harness.api.put_account("acme", 10)
    created = {harness.api.create("acme").json()["resourceId"] for _ in range(3)}  # pending: not pumped
    calls: list[str] = []
    for operation in ("Scan", "Query"):
        faults.before_call(operation, lambda _, name=operation: calls.append(name))

    pending = list(harness.wiring.counting_store.pending_records(None))

    assert {record.resource_id if record else item_id for item_id, record in pending} == created
    assert calls == ["Scan"]


def test_a_sweep_follows_every_page_of_the_pending_index(harness: Harness, faults: Faults) -> None:
    harness.api.put_account("acme", 10)
    created = {harness.api.create("acme").json()["resourceId"] for _ in range(3)}
    pages: list[int] = []

    def one_item_a_page(params: dict[str, Any]) -> None:
        params.update(Limit=1)
        pages.append(1)

    faults.before_call("Scan", one_item_a_page)

    report = sweep_at(harness, harness.clock.now() + timedelta(hours=1), SweepSettings())

    assert len(pages) >= 3
    assert sum(report.pending.outcomes.values()) == 3
    truth = harness.truth("acme")
    assert (truth.eventual, truth.live) == (len(created), 3)
