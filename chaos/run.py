"""A chaos run: the whole system under concurrent clients and injected faults, then the invariants.

`python -m chaos --help` lists the knobs. The run:

1. starts the emulator and the local runtime with seeded faults;
2. runs the clients while a sampler checks every account's (and type's) snapshot again and again;
3. waits for quiescence (DLQ 1 empty, nothing pending outside fatal accounts);
4. checks the end state from outside (API) and inside (the table);
5. heals every account and checks that both counters came back to the truth.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from hybrid_counter_client import HybridCounterError, LimitsClient

from chaos.checks import Check
from chaos.faults import ALL_KINDS, ChaosConfig, read_ledger
from chaos.truth import Snapshot, snapshot
from chaos.usage_events import (
    QuotaEvents,
    StreamTruth,
    Subscriber,
    event_checks,
    refusal_checks,
    refusal_lines,
    refusals_announced,
    refused_units_announced,
    replay,
    stream_records,
)
from chaos.workload import (
    GRANT_SECONDS,
    PLANS,
    Account,
    AccountDeleter,
    ClientOutcomes,
    Gate,
    LimitChanger,
    PlanChanger,
    attempt,
    create,
    drain,
    fill,
    run_clients,
    shrink_one_each,
)
from functions.adapters import keys, resources
from functions.adapters.attributes import to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.failure_messages import InvalidFailureMessage, parse_failure_message
from functions.adapters.healing_store import DynamoHealingStore
from functions.adapters.resources import resource_from_item
from functions.adapters.table_layout import PARTITION_KEY, SORT_KEY, item_key
from functions.core.healing import HealOutcome, heal_account
from functions.core.leases import (
    DROP,
    FINISH_DELETION,
    RELEASE_RESERVATION,
    UNDO_DELETION,
    Lease,
    LeaseKind,
    Settlement,
    in_units,
    resolution,
)
from functions.core.model import DEFAULT_RESOURCE_TYPE, Quota, Resource
from functions.core.periods import parse_period
from functions.usage_events.models import AccountDeleted
from infra.function_settings import HEAL_QUIET_SECONDS
from infra.outputs import OUTPUT_EVENT_BUS_NAME
from local.clock import ShiftedClock
from local.emulator import EmulatorProcess
from local.partition_throttling import read_throttles
from local.product import (
    SINGLE_ATTEMPT,
    admin_client,
    by_family,
    refusal_environment,
    runtime_settings,
    scaled_environment,
)
from local.runtime import LocalRuntime
from ops import commands
from ops.stack import TryLater

FATAL_PREFIX = "fatal"
# With plans: one more ordinary account, on a plan, that the plans' admin deletes while the clients
# create in it (docs/chaos.md, "Plans").
DOOMED_ACCOUNT = "gone-0"
# A minute's refused creates are announced this long after it ends (the deployed default: 90 s),
# after the local runtime's retries of a failed aggregator invocation (1 s, then 2 s).
REFUSAL_GRACE_SECONDS = 5
# How long past that the checks wait for the last minute's Limit Refused events.
REFUSALS_ANNOUNCED_TIMEOUT = 30.0
FATAL_CREATES = 2
# With amounts: each create takes, and each resize sets, 1..MAX_AMOUNT units (4.5 on average), and
# every limit is AMOUNT_SCALE times the one-unit run's, so quotas still fill up and refuse.
MAX_AMOUNT = 8
AMOUNT_SCALE = 4
# With periods: each account also holds a periodic type (`day`, UTC days) at a small limit, and the
# run's clock starts ten seconds before the first midnight, crosses it while the clients work, and
# then, while no client request is in flight, jumps to LEAD before the next one, `boundaries` times
# in all: the last days of 2026 and the first of 2027 (a month's end and a year's too).
PERIODIC_TYPE = "builds"
PERIODIC_LIMIT, HOT_PERIODIC_LIMIT = 12, 6
FIRST_BOUNDARY = datetime(2026, 12, 30, tzinfo=UTC)
START_LEAD = timedelta(seconds=10)
LEAD = timedelta(seconds=2)
AFTER = timedelta(seconds=2)  # how long the clients work past a midnight before the next jump
# A past period is settled once it ended this long ago (by the run's clock: a create admitted in
# its last instant has landed its record by then) and none of its records is pending: its eventual
# total may never change after.
SETTLE_AFTER = timedelta(seconds=60)
# How long the clock mover waits, the clients stopped, for the system to be quiet before a jump.
SETTLE_TIMEOUT = 30.0
# Before a jump of hours: the clock moves this far first, and the scheduled functions run once
# (the sweeper, every 5 minutes when deployed, settles leases dead for a minute: HEAL_QUIET_SECONDS).
SCHEDULES_AFTER = timedelta(minutes=5)
DEFAULT_RATES = {
    "throttle": 0.02,
    "fail_before": 0.02,
    "land_then_500": 0.02,
    "lands_answers_late": 0.02,
    "transaction_conflict": 0.05,
    "crash_after_write": 0.01,
    "trimmed": 0.5,  # per redrive read: only DLQ 1 traffic meets it
    "duplicate_delivery": 0.3,  # per delivered batch: a run has tens of batches, not thousands of calls
    "concurrent_delivery": 0.3,
    "out_of_order_replay": 0.3,
}


@dataclass
class ChaosSettings:
    seed: int = 7
    operations: int = 600
    clients: int = 8
    accounts: int = 4
    hot_accounts: int = 2
    rates: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RATES))
    fatal: bool = True  # one account whose every transaction fails: its records must end in DLQ 2
    late_single_item_only: bool = False  # lands_answers_late on single-item writes only, always a 500
    mutation: str | None = None
    quiescence_timeout: float = 180.0
    # The emulator enforces DynamoDB's partition limits times this factor ("1/100"): hot accounts
    # throttle, grow admission shards, and every check must still hold (docs/scaling.md).
    partition_limits: str | None = None
    partition_burst_seconds: float = 0.0
    # CDK context for the stack under test (`-c streamParallelizationFactor=2`: the consumer at
    # the concurrency a deployment chose).
    context: dict[str, str] = field(default_factory=dict)
    # `ops audit --repair` on every account, over and over, beside the clients (docs/healing.md).
    audit_repair: bool = False
    # Resource types per account, the default one included: each account's limits are this many
    # quotas, the clients race across them and every check holds per (account, type).
    types: int = 1
    # Limit changes an admin makes (chaos/workload.py LimitChanger): while the clients work,
    # lowered to the usage or below, raised well above, set back; the last once they stopped.
    limit_changes: int = 6
    # How long the checks wait for the crossings and deliveries still due once the run is quiet.
    events_timeout: float = 60.0
    # Check the Limit Refused events: the run then waits for the minute of the last refusal to end
    # and be announced (up to a minute more). `python -m chaos` does unless told not to.
    refusal_events: bool = False
    # Amounts (docs/admission.md, "Amounts"): creates take 1..MAX_AMOUNT units, the clients also
    # resize live resources to 1..MAX_AMOUNT, and the limits are AMOUNT_SCALE times larger. Off:
    # every resource holds 1 unit, and a seed makes the run it made before amounts.
    amounts: bool = False
    # Periodic quotas (docs/periods.md): each account also holds a periodic type, and the local
    # runtime's clock (local/clock.py) crosses `boundaries` midnights while the clients create,
    # refund and retry with their keys. Off: no periodic quota, the system clock.
    periods: bool = False
    boundaries: int = 3
    # Plans (docs/plans.md): every ordinary account's named types take their limits from a plan
    # (chaos/workload.py PlanChanger: plans changed, accounts moved between them, expiring grants
    # given, overrides returned), and once quiet every account must be at its plan's limits.
    plans: bool = False
    plan_changes: int = 8
    # Once the clients stop, fill each hot quota to its limit and let it be counted, then delete
    # every resource left (a periodic quota's records aside): every quota ends empty, so each
    # threshold it ever crossed up it then crosses down, and the hot ones crossed every threshold.
    drain: bool = False
    # Once the clients stop and the run has settled, shrink one live resource of each account by a
    # unit (amounts): a resize of a resource the consumer has counted, which it counts as a resize
    # whatever the timing made of the clients' own (a resize counted with its create is a create).
    resize_once_counted: bool = False

    @property
    def faults_on(self) -> bool:
        return any(rate > 0 for rate in self.rates.values())

    @property
    def only_ambiguous_writes(self) -> bool:
        """Every fault on is a write that lands and loses its answer: nothing may show at all."""
        ambiguous = {"land_then_500", "lands_answers_late"}
        return self.faults_on and all(rate == 0 for kind, rate in self.rates.items() if kind not in ambiguous)


@dataclass
class Report:
    settings: dict[str, Any]
    operations: dict[str, int] = field(default_factory=dict)
    creates_per_type: dict[str, int] = field(default_factory=dict)  # acknowledged creates by resource type
    client_retries: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    lambda_traffic: dict[str, int] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    max_limit_overshoot: int = 0
    overshoot_bound: int = 0
    most_admission_shards: int = 0  # the most shard items one account had at a sampled instant
    partition_throttles: dict[str, int] = field(default_factory=dict)  # the emulator's refusals per kind of item
    seconds_to_quiescence: float | None = None
    seconds_total: float = 0.0
    # Where the run's time went, phase by phase (start-up, workload, quiescence, checks, stop).
    seconds_per_phase: dict[str, float] = field(default_factory=dict)
    audits: dict[str, int] = field(default_factory=dict)  # verdicts of the audit beside the clients
    limit_changes: list[str] = field(default_factory=list)  # "<quota> <old> -> <new>", as the admin made them
    plan_changes: list[str] = field(default_factory=list)  # what the plans' admin did (`--plans`)
    # Creates the API refused (its log lines), and the Limit Refused events announcing them.
    refusals: dict[str, int] = field(default_factory=dict)
    # With periods: the midnights the clock crossed while the clients worked, and each period's
    # records, units and eventual total once quiet.
    periods: dict[str, Any] = field(default_factory=dict)

    @property
    def violations(self) -> int:
        return sum(len(check.violations) for check in self.checks)

    def to_json(self) -> str:
        data = asdict(self)
        data["violations"] = self.violations
        return json.dumps(data, indent=2, sort_keys=True)


@dataclass(frozen=True)
class PeriodPlan:
    """The periods of a run with periodic quotas: the days its clock starts in and crosses into,
    told by the local runtime's clock (local/clock.py) that the run moves."""

    clock: ShiftedClock
    boundaries: int

    def boundary(self, index: int) -> datetime:
        return FIRST_BOUNDARY + timedelta(days=index)

    @property
    def ids(self) -> list[str]:
        """Every period the clients may create in: the first day's and each crossed into."""
        return [day_window(self.boundary(index) - timedelta(days=1)) for index in range(self.boundaries + 1)]

    def settled(self, period_id: str) -> bool:
        """The period ended long enough ago that no create admitted in it still lands a record."""
        return self.clock.now() >= start_of_window(period_id) + timedelta(days=1) + SETTLE_AFTER


def day_window(moment: datetime) -> str:
    return parse_period("day", None).window_at(moment).id


def start_of_window(period_id: str) -> datetime:
    return datetime.strptime(period_id, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def views(account: Account, plan: PeriodPlan | None) -> list[Quota]:
    """What the checks look at for a limit: a holding's quota, or each period of a periodic one."""
    if account.period is None or plan is None:
        return [account.quota]
    return [account.quota.in_period(period_id) for period_id in plan.ids]


class Sampler(threading.Thread):
    """Checks one snapshot after another, of each account's every type (and each period of a
    periodic one), while the clients run."""

    def __init__(
        self, dynamodb: Any, table: str, accounts: list[Account], faults_on: bool, plan: PeriodPlan | None = None
    ) -> None:
        super().__init__(name="chaos-sampler", daemon=True)
        self._dynamodb, self._table, self._accounts = dynamodb, table, accounts
        self._faults_on = faults_on
        self._plan = plan
        self.settled = Check("periodic: a past period's eventual total never changes once it is settled")
        self.settled_totals: dict[Quota, int] = {}
        self.stop = threading.Event()
        self.best_effort = Check("best-effort <= live at every sampled instant")
        self.eventual = Check("eventual = existing counted resources at every sampled instant")
        self.admitted = Check("admitted >= live at every sampled instant")
        self.held = Check("room + admitted = limit over every admission shard at every sampled instant")
        self.samples = 0
        # (quota, limit version, live, limit) whenever live > limit: a lowered limit leaves that
        # much, which only the stream tells (limit_check)
        self.over_limit: list[tuple[Quota, int, int, int]] = []
        self.max_shards = 0
        self._forgotten: set[str] = set()  # accounts being deleted: no longer sampled
        self._looking = threading.Lock()  # held over each snapshot and its checks

    def forget(self, account_id: str) -> None:
        """Sample the account no more (it is being deleted: its fence removes its admission
        shards, its erasure the rest); returns once no snapshot of it is being taken."""
        with self._looking:
            self._forgotten.add(account_id)

    def run(self) -> None:
        while not self.stop.is_set():
            for account in self._accounts:
                for quota in views(account, self._plan):
                    if self.stop.is_set():
                        return
                    with self._looking:
                        if account.account_id not in self._forgotten:
                            self.observe(snapshot(self._dynamodb, self._table, quota))
                self.stop.wait(0.02)

    def observe(self, shot: Snapshot) -> None:
        live = shot.live_units  # in units: the sum of the live resources' amounts
        self.best_effort.expect(shot.best_effort <= live, f"{shot.quota}: best-effort {shot.best_effort} > live {live}")
        self.eventual.expect(
            shot.eventual == shot.processed, f"{shot.quota}: eventual {shot.eventual} != counted {shot.processed}"
        )
        self.admitted.expect(shot.admitted >= live, f"{shot.quota}: admitted {shot.admitted} < live {live}")
        self.held.expect(
            shot.room + shot.admitted == shot.limit,
            f"{shot.quota}: room {shot.room} + admitted {shot.admitted} != limit {shot.limit} "
            f"over {shot.shards} shard(s)",
        )
        self.max_shards = max(self.max_shards, shot.shards)
        self.samples += 1
        period = shot.quota.period
        if self._plan is not None and period and shot.pending == 0 and self._plan.settled(period):
            first = self.settled_totals.setdefault(shot.quota, shot.eventual)
            self.settled.expect(shot.eventual == first, f"{shot.quota}: eventual {shot.eventual}, settled at {first}")
        if live > shot.limit:
            self.over_limit.append((shot.quota, shot.limit_version, live, shot.limit))


class ClockMover(threading.Thread):
    """Moves the run's clock over its midnights while the clients work, and shares the clients'
    operations evenly between the run's days (the gate's ceiling). The clock starts START_LEAD
    before the first midnight. Each day, once the clients have made half its share (or the clock
    is LEAD before its midnight already), it sets the clock to LEAD before that midnight and lets
    it run over it at the real pace, the clients working on; the rest of the day's share waits
    for midnight, so each day after one has its operations too. The clock moves only while the
    gate is closed: no client request in flight could take a live lease for a stale one, or be
    answered after its caller gave up. And only once the system is quiet (`settle`: the consumer
    has counted every write, DLQ 1 is empty), as a minute of real time would leave it: after a
    jump every quota has had no write for a day, which is when a heal sets `admitted` to the
    eventual count (functions/core/healing.py), and that count must then be the truth. A jump
    of hours first moves the clock SCHEDULES_AFTER on and runs the scheduled functions once
    (`schedules`: the sweeper), as the hours skipped would have."""

    def __init__(
        self,
        plan: PeriodPlan,
        gate: Gate,
        operations: int,
        settle: Callable[[], bool],
        schedules: Callable[[], object],
    ) -> None:
        super().__init__(name="chaos-clock-mover", daemon=True)
        self._plan, self._gate, self._settle, self._schedules = plan, gate, settle, schedules
        days = plan.boundaries + 1
        self._ends = [operations * (index + 1) // days for index in range(days)]  # each day's last operation
        self.stop = threading.Event()
        self.crossed = 0  # midnights the clock had crossed when the clients stopped
        self.moves: list[str] = []  # each jump, and where the clock was when the clients stopped

    def begin(self) -> None:
        self._plan.clock.set(self._plan.boundary(0) - START_LEAD)
        self.start()

    def run(self) -> None:
        try:
            self._move()
        finally:
            self._gate.let_through(None)

    def _move(self) -> None:
        clock = self._plan.clock
        for index in range(self._plan.boundaries):
            midnight = self._plan.boundary(index)
            start = self._ends[index - 1] if index else 0
            half = (start + self._ends[index]) // 2
            self._gate.let_through(self._ends[index])
            while self._gate.entered < half and clock.now() < midnight - LEAD:
                if self.stop.wait(0.02):
                    return
            if clock.now() < midnight - LEAD:
                self._gate.close()  # waits for the requests in flight: the clock runs on meanwhile
                try:
                    settled = self._settle()
                    before = clock.now()
                    swept = before + SCHEDULES_AFTER < midnight - LEAD
                    if swept:
                        # What the skipped hours do first: the sweeper, minutes later, settles
                        # the dead leases and heals the quiet quotas (in a day, a dead lease gets
                        # older than the key window, and its settlement no longer trusts a
                        # missing record: functions/core/leases.py `resolution`).
                        clock.set(before + SCHEDULES_AFTER)
                        self._schedules()
                    if before < midnight - LEAD:  # forward only
                        clock.set(midnight - LEAD)
                        moved = f"{_instant(before)} -> {_instant(clock.now())}"
                        quiet = "" if settled else " (not quiet)"
                        scheduled = f", the scheduled functions run at +{SCHEDULES_AFTER}" if swept else ""
                        self.moves.append(f"{moved} after {self._gate.entered} operations{quiet}{scheduled}")
                finally:
                    self._gate.open()
            while clock.now() < midnight:
                if self.stop.wait(0.01):
                    return
            self._gate.let_through(self._ends[index + 1])  # the next day's share
            while clock.now() < midnight + AFTER:
                if self.stop.wait(0.02):
                    return

    def finish(self) -> None:
        """The clients stopped: the clock moves on at the real pace from here."""
        self.stop.set()
        self.join()
        now = self._plan.clock.now()
        self.moves.append(f"clients done at {_instant(now)} after {self._gate.entered} operations")
        self.crossed = sum(self._plan.boundary(index) <= now for index in range(self._plan.boundaries))


def _settled(
    runtime: LocalRuntime, dynamodb: Any, table: str, accounts: list[Account], plan: PeriodPlan | None
) -> bool:
    """Wait (up to SETTLE_TIMEOUT) until nothing is pending outside fatal accounts and DLQ 1 is empty."""
    return wait_for_quiescence(runtime, dynamodb, table, accounts, SETTLE_TIMEOUT, plan) is not None


def _instant(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def limit_check(sampler: Sampler, truth: StreamTruth, bound: int) -> tuple[Check, int]:
    """Live <= limit at every sampled instant, or, under a limit lowered below the usage, <= the
    usage it found; and the largest overshoot past that."""
    check = Check(
        "live <= limit at every sampled instant (under a lowered limit: <= the usage it found; "
        f"documented overshoot bound: {bound})"
    )
    check.checked = sampler.samples - len(sampler.over_limit)
    overshoot = 0
    for quota, version, live, limit in sampler.over_limit:
        ceiling = truth.ceiling(quota, version, limit)
        overshoot = max(overshoot, live - ceiling)
        check.expect(live <= ceiling, f"{quota}: live {live} > limit {limit} (version {version} allows {ceiling})")
    return check, overshoot


# What faults inject and a repair may correct: slots held and increments lost by requests that died
# between writes. Anything else an audit reports (the eventual counter off, an overcount, admitted
# below the live resources) is drift no fault injects: a bug.
# Matched against functions/core/audit.py audit_problems' words (tests/chaos/test_drift_words.py).
INJECTABLE_DRIFT = ("slot(s) held beyond the writes in flight", "below the live units beyond the writes in flight")


def unexplained_drift(problems: Sequence[str]) -> list[str]:
    """The problems an audit reported that no injected fault explains."""
    return [problem for problem in problems if not any(kind in problem for kind in INJECTABLE_DRIFT)]


class Auditor(threading.Thread):
    """`ops audit --repair` beside the clients: audits each account in turn and repairs what
    drifted, as an operator would while writes continue."""

    def __init__(
        self, dynamodb: Any, table: str, accounts: list[Account], now: Callable[[], datetime] | None = None
    ) -> None:
        super().__init__(name="chaos-auditor", daemon=True)
        self._table, self._accounts = DynamoTable(dynamodb, table), accounts
        self._now = now or (lambda: datetime.now(UTC))  # the local runtime's functions' clock
        self.stop = threading.Event()
        self.check = Check("the audit beside the clients reports no drift that faults do not inject")
        self.verdicts: Counter[str] = Counter()

    def run(self) -> None:
        while not self.stop.is_set():
            for account in self._accounts:
                if self.stop.is_set():
                    return
                finding = commands.audit_account(self._table, account.quota)
                self.verdicts[finding.verdict] += 1
                if finding.verdict != "inconclusive":
                    unexplained = unexplained_drift(finding.problems)
                    self.check.expect(not unexplained, f"{account.name}: {'; '.join(unexplained)}")
                if finding.verdict == "drift":
                    try:
                        commands.repair_account(
                            self._table,
                            finding,
                            timedelta(seconds=HEAL_QUIET_SECONDS),
                            self._now(),
                        )
                        self.verdicts["repaired"] += 1
                    except TryLater:
                        self.verdicts["repair deferred"] += 1


T = TypeVar("T")


def read_carefully(read: Callable[[], T], what: str, attempts: int = 20) -> T:
    """A read (`read`: one request of a SINGLE_ATTEMPT client) as a careful client makes it: a GET
    is safe, so a 429 or any 5xx is retried after its Retry-After. Under scaled partition limits the
    end-state reads can drain an account's read capacity (503 after the SDK's retries, as
    documented), and a GET writes its tenant's rate lease, so an injected crash after that write
    answers API Gateway's 502. Any other error fails the read at once."""
    last: HybridCounterError | None = None
    for _ in range(attempts):
        try:
            return read()
        except HybridCounterError as error:
            if error.status is None or not error.retryable:
                raise AssertionError(f"{what}: {error}") from error
            last = error
            time.sleep(1.0 if error.retry_after is None else error.retry_after)
    raise AssertionError(f"{what}: still {last} after {attempts} attempts")


def resource_types(count: int) -> list[str]:
    """The default type, then `type-1` .. `type-<count - 1>`."""
    return [DEFAULT_RESOURCE_TYPE, *(f"type-{index}" for index in range(1, count))]


def make_accounts(settings: ChaosSettings) -> list[Account]:
    """Every limit the clients work on: each account's types, its default type first (a type's
    first PUT needs no account, but the default type's limit is then 0 until the account's PUT)."""
    scale = AMOUNT_SCALE if settings.amounts else 1
    accounts = [Account(f"acct-{i}", limit=40 * scale) for i in range(settings.accounts)]
    accounts += [Account(f"hot-{i}", limit=5 * scale, hot=True) for i in range(settings.hot_accounts)]
    if settings.plans:
        accounts.append(Account(DOOMED_ACCOUNT, limit=40 * scale))
    if settings.fatal and settings.faults_on:
        accounts.append(Account(f"{FATAL_PREFIX}-0", limit=10 * scale, fatal=True))
    typed = [replace(account, resource_type=kind) for account in accounts for kind in resource_types(settings.types)]
    if settings.periods:  # each account's periodic type, the fatal one's aside
        typed += [
            replace(
                account,
                resource_type=PERIODIC_TYPE,
                period="day",
                limit=HOT_PERIODIC_LIMIT if account.hot else PERIODIC_LIMIT,
            )
            for account in accounts
            if not account.fatal
        ]
    return typed


def run(settings: ChaosSettings, log_dir: str | None = None) -> Report:
    started = time.monotonic()
    last_mark = started

    def phase_over(name: str) -> None:
        nonlocal last_mark
        now = time.monotonic()
        report.seconds_per_phase[name] = round(now - last_mark, 1)
        last_mark = now

    log_dir = log_dir or tempfile.mkdtemp(prefix="hybrid-counter-chaos-")
    ledger_path = f"{log_dir}/faults.jsonl"
    report = Report(settings=asdict(settings))
    accounts = make_accounts(settings)
    fatal_rule = {
        "functions": [],
        "operation": "TransactWriteItems",
        "contains": keys.account_pk(Quota(f"{FATAL_PREFIX}-")),
        "answer": "TransactionConflict",
    }
    chaos = (
        ChaosConfig(
            settings.seed,
            ledger_path,
            settings.rates,
            settings.mutation,
            late_single_item_only=settings.late_single_item_only,
        )
        if settings.faults_on
        else None
    )
    if chaos is None and settings.mutation:
        chaos = ChaosConfig(settings.seed, ledger_path, {}, settings.mutation)

    # The runtime's clock: moved over midnights (`--periods`), and past an account's erasure once
    # the clients stopped (`--plans`).
    clock = ShiftedClock(f"{log_dir}/clock.offset") if settings.periods or settings.plans else None
    plan = PeriodPlan(clock, settings.boundaries) if clock is not None and settings.periods else None
    now: Callable[[], datetime] = partial(datetime.now, UTC) if clock is None else clock.now
    with EmulatorProcess(
        partition_limits=settings.partition_limits, partition_burst_seconds=settings.partition_burst_seconds
    ) as emulator:
        runtime = LocalRuntime(
            runtime_settings(
                emulator.url,
                environment={
                    **scaled_environment(settings.partition_limits),
                    **refusal_environment(REFUSAL_GRACE_SECONDS),
                },
                port=0,
                faults=[fatal_rule] if any(a.fatal for a in accounts) else [],
                sandbox_hook=None if chaos is None else chaos.sandbox_hook(),
                delivery_faults=None if chaos is None else chaos.delivery_faults,
                sqs_retry_visibility_seconds=1,
                retry_backoff_seconds=0.05,
                log_dir=log_dir,
                context=settings.context,
                clock=clock,
            )
        )
        runtime.deploy_and_start()
        phase_over("start")
        try:
            api = admin_client(runtime, retry=SINGLE_ATTEMPT)
            dynamodb = runtime.client("dynamodb")
            table = runtime.outputs["TableName"]
            on_plans = [a for a in accounts if settings.plans and not a.fatal and not a.quota.is_default]
            for account in accounts:
                if account not in on_plans:
                    _put_account(api, account)
            plans = _put_plans(api, on_plans) if on_plans else {}
            # Every check but the deletion's judges the accounts that stay (the deleted one's
            # counts are gone by design); the sampler, until its DELETE is sent.
            doomed = [account for account in accounts if account.account_id == DOOMED_ACCOUNT]
            staying = [account for account in accounts if account not in doomed]
            staying_on_plans = [account for account in on_plans if account not in doomed]

            subscriber = Subscriber(runtime.client, runtime.outputs[OUTPUT_EVENT_BUS_NAME])
            outcomes = ClientOutcomes(clock=None if plan is None else plan.clock.now)
            gate = Gate()
            sampler = Sampler(dynamodb, table, accounts, settings.faults_on, plan)
            sampler.start()
            holdings = [account for account in staying if account.period is None]
            auditor = Auditor(dynamodb, table, holdings, now) if settings.audit_repair else None
            if auditor is not None:
                auditor.start()
            for account in accounts:
                if account.fatal:  # a few creates whose counting always fails: the injected-fatal work
                    for index in range(FATAL_CREATES):
                        create(api, account, f"fatal-{index}", outcomes)
            ordinary = [account for account in accounts if not account.fatal]
            unit = AMOUNT_SCALE if settings.amounts else 1
            # A periodic quota's limit stays as set: the checks hold each period to it at every instant.
            changer = LimitChanger(
                api,
                [account for account in ordinary if account.period is None and account not in doomed],
                outcomes,
                settings.operations,
                settings.limit_changes,
                settings.seed,
                unit,
                gate,
            )
            changer.start()
            plan_changer = (
                PlanChanger(
                    api,
                    staying_on_plans,
                    outcomes,
                    settings.operations,
                    settings.plan_changes,
                    settings.seed,
                    plans,
                    unit,
                    gate,
                )
                if on_plans
                else None
            )
            if plan_changer is not None:
                plan_changer.start()
            deleter = (
                AccountDeleter(api, doomed, outcomes, settings.operations, sampler.forget, gate) if doomed else None
            )
            if deleter is not None:
                deleter.start()
            settle = partial(_settled, runtime, dynamodb, table, staying, plan)
            mover = (
                None if plan is None else ClockMover(plan, gate, settings.operations, settle, runtime.run_schedules_now)
            )
            if mover is not None:
                mover.begin()
            max_amount = MAX_AMOUNT if settings.amounts else None
            run_clients(api, ordinary, settings.operations, settings.clients, settings.seed, outcomes, max_amount, gate)
            if settings.drain:
                drained = [account for account in ordinary if account.period is None]
                # Each hot quota at its limit, and counted there before its resources go: a crossing
                # up its counter made, whatever the clients' timing, that the drain then crosses down.
                fill(api, [account for account in drained if account.hot], outcomes)
                settle()
                drain(api, drained, outcomes)
            if settings.resize_once_counted:
                settle()
                shrink_one_each(api, [account for account in ordinary if account.period is None], outcomes)
            if mover is not None:
                mover.finish()
            # With plans, the named types' last changes are the plans' (each then a plan's own limit).
            changer.finish(
                only=[account for account in ordinary if account not in on_plans and account not in doomed]
                if on_plans
                else None
            )
            report.limit_changes = changer.made
            if plan_changer is not None:
                plan_changer.finish()
                report.plan_changes = plan_changer.made
            if deleter is not None:
                deleter.finish()
                report.plan_changes += deleter.made
            workload_done = time.monotonic()
            phase_over("workload")

            quiet = wait_for_quiescence(runtime, dynamodb, table, staying, settings.quiescence_timeout, plan)
            sampler.stop.set()
            sampler.join()
            if auditor is not None:
                auditor.stop.set()
                auditor.join()
                report.audits = dict(auditor.verdicts)
            report.seconds_to_quiescence = None if quiet is None else round(quiet - workload_done, 1)
            phase_over("quiescence")

            report.operations = dict(sorted(outcomes.statuses.items()))
            report.creates_per_type = dict(sorted(outcomes.creates_per_type.items()))
            report.client_retries = outcomes.retries
            report.checks = [sampler.best_effort, sampler.eventual, sampler.admitted]
            if auditor is not None:
                report.checks.append(auditor.check)
            report.checks.append(quiescence_check(quiet))
            report.checks += end_state_checks(api, runtime, dynamodb, table, staying, outcomes, plan)
            if settings.amounts:
                report.checks.append(amounts_check(dynamodb, table, staying, outcomes, plan))
            if plan is not None and mover is not None:
                report.periods, period_checks_made = period_checks(
                    dynamodb, table, staying, outcomes, plan, sampler, mover.crossed, mover.moves
                )
                report.checks += period_checks_made
            if plan_changer is not None:
                report.checks.append(
                    plans_check(api, runtime, staying_on_plans, plan_changer, settings.quiescence_timeout)
                )
                phase_over("plans settled")
            report.checks.append(dlq2_check(runtime, accounts))
            report.checks.append(fatal_work_kept_check(dynamodb, table, accounts, outcomes))
            phase_over("end state checks")
            quotas, truth = settled_usage_events(
                runtime, dynamodb, table, staying, subscriber, settings.events_timeout, plan
            )
            phase_over("usage events settled")
            report.checks += event_checks(quotas, truth, subscriber.received)
            if settings.refusal_events and plan is None:
                refusal_report, refusal_checks_made = announced_refusal_checks(
                    dynamodb, table, staying, subscriber, log_dir, outcomes
                )
                report.refusals = refusal_report
                report.checks += refusal_checks_made
                phase_over("refusal events")
            report.checks.append(heal_check(dynamodb, table, staying, now(), plan))
            if settings.only_ambiguous_writes:
                report.checks += unseen_ambiguity_checks(api, dynamodb, table, holdings, outcomes)
            report.most_admission_shards = sampler.max_shards
            report.checks.append(sampler.held)
            if settings.partition_limits:
                report.partition_throttles = by_family(read_throttles(emulator.url))
            within_limits, report.max_limit_overshoot = limit_check(sampler, truth, report.overshoot_bound)
            report.checks.append(within_limits)
            if plan is not None:
                report.checks.append(sampler.settled)
            if deleter is not None and clock is not None:
                # Last: it moves the runtime's clock past the erasure's settling time.
                report.checks += deletion_checks(
                    runtime, dynamodb, table, clock, deleter, outcomes, subscriber, settings.events_timeout
                )
                phase_over("account erased")
            report.lambda_traffic = lambda_traffic(runtime)
            phase_over("other checks")
        finally:
            runtime.stop()
    phase_over("stop")
    counts = Counter(entry["kind"] for entry in read_ledger(ledger_path))
    report.faults = {kind: counts.get(kind, 0) for kind in ALL_KINDS} if settings.faults_on else {}
    report.seconds_total = round(time.monotonic() - started, 1)
    return report


def announced_refusal_checks(
    dynamodb: Any, table: str, accounts: list[Account], subscriber: Subscriber, log_dir: str, outcomes: ClientOutcomes
) -> tuple[dict[str, int], list[Check]]:
    """The Limit Refused events against the API's refusal lines, once the minute of the last one
    has ended and been announced and the bus delivered them (or the deadline passed: the checks
    then say what is missing)."""
    now = datetime.now(UTC)
    minute_left = 60 - now.second - now.microsecond / 1e6
    deadline = time.monotonic() + minute_left + REFUSAL_GRACE_SECONDS + REFUSALS_ANNOUNCED_TIMEOUT
    api_log = os.path.join(log_dir, "api.log")  # local/functions.py log_path: the API function's file
    while True:
        lines, line_units = refusal_lines(api_log)
        announced = {account.quota: snapshot(dynamodb, table, account.quota).refusals for account in accounts}
        ids = {event["eventId"] for events in announced.values() for event in events}
        received = {str(event["detail"]["eventId"]) for event in subscriber.receive()}
        done = all(
            refusals_announced(announced[quota]) == lines[quota]
            and refused_units_announced(announced[quota]) == line_units[quota]
            for quota in announced
        )
        done = done and ids <= received
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    answered = {account.quota: outcomes.refused[account.name] for account in accounts}
    answered_units = {account.quota: outcomes.refused_units[account.name] for account in accounts}
    figures = {
        "refusal lines": sum(lines.values()),
        "Limit Refused events": len(ids),
        "refusals announced": sum(refusals_announced(events) for events in announced.values()),
    }
    return figures, refusal_checks(announced, lines, answered, subscriber.received, line_units, answered_units)


def _put_plans(api: LimitsClient, on_plans: list[Account]) -> dict[str, dict[str, int]]:
    """The plans, each type's limit the accounts' as made (the hot accounts' on the first plan, the
    others' on the second, so that a move changes it), and every account put on the first."""
    hot = {account.resource_type: account.limit for account in on_plans if account.hot}
    calm = {account.resource_type: account.limit for account in on_plans if not account.hot}
    kinds = sorted({account.resource_type for account in on_plans})
    plans = {
        PLANS[0]: {kind: hot.get(kind, calm.get(kind, 0)) for kind in kinds},
        PLANS[1]: {kind: calm.get(kind, hot.get(kind, 0)) for kind in kinds},
    }
    for name, quotas in plans.items():
        _careful(partial(api.put_plan, name, quotas={kind: {"limit": limit} for kind, limit in quotas.items()}))
    for account_id in sorted({account.account_id for account in on_plans}):
        _careful(partial(api.put_account, account_id, plan=PLANS[0]))
    return plans


def _careful(call: Callable[[], object]) -> None:
    """Retried until it answers 2xx (each call here lands once however often it is made)."""
    for _ in range(20):
        try:
            call()
            return
        except HybridCounterError:
            pass
        time.sleep(0.1)
    raise RuntimeError("a setup call kept failing")


def plans_check(
    api: LimitsClient, runtime: LocalRuntime, on_plans: list[Account], changer: PlanChanger, timeout: float
) -> Check:
    """Once the plans' last changes have reached every account (their rollouts done, the grants
    ended by a sweep): each account is on a plan at its current version, and each named type whose
    limit comes from the plan has the plan's limit; an override (a type's own PUT) keeps its own."""
    check = Check("plans: once the rollouts are done, every account is at its plan's current limits (or its overrides)")
    check.violations += [
        f"the plans' admin was answered what it never expects: {failure}" for failure in changer.failed
    ]
    plans = changer.plans
    time.sleep(GRANT_SECONDS)  # the last grant has ended: the sweep ends it
    runtime.run_schedules_now()
    deadline = time.monotonic() + timeout
    for name in plans:
        while True:
            found = read_carefully(partial(api.get_plan, name), f"plan {name}")
            rollout = found.rollout
            if rollout is not None and rollout.version == found.version and rollout.updated == rollout.accounts:
                break
            if time.monotonic() > deadline:
                check.violations.append(f"{name}: its rollout never finished: {rollout}")
                break
            time.sleep(0.2)
    for account_id in sorted({account.account_id for account in on_plans}):
        view = read_carefully(partial(api.get_account, account_id), f"account {account_id}")
        check.checked += 1
        if view.plan not in plans:
            check.violations.append(f"{account_id}: on {view.plan}, not one of the run's plans")
            continue
        for kind in view.types or []:
            given = plans[view.plan].get(kind.type)
            if given is None:
                continue
            if kind.expires_at is not None:
                check.violations.append(f"{account_id}/{kind.type}: a grant until {kind.expires_at} still stands")
            if kind.limit_source == "plan" and kind.limit != given:
                check.violations.append(
                    f"{account_id}/{kind.type}: {kind.limit} from {view.plan}, whose limit is {given}"
                )
    return check


def deletion_checks(
    runtime: LocalRuntime,
    dynamodb: Any,
    table: str,
    clock: ShiftedClock,
    deleter: AccountDeleter,
    outcomes: ClientOutcomes,
    subscriber: Subscriber,
    timeout: float,
) -> list[Check]:
    """The account the plans' admin deleted while the clients created in it (docs/plans.md,
    "Lifecycle"), once the run is quiet. Its erasure waits for the fence to be older than the
    heal's quiet time: rather than a minute of the run's time, the runtime's clock moves that far
    past the fence (the entry's `fenced_ms`), and the scheduled functions run once, as the
    sweeper's next tick would. Then no item names the account (every partition key, the counter
    shards', the grants' entries, the deletions' entry: a Scan of the run's small table), its
    tenant's rate windows aside (left to their TTL, as documented); no create a client was
    acknowledged is left behind; none first sent after the DELETE was answered was acknowledged
    (a create racing the DELETE is refused or erased with the rest; one after it is refused); and
    one Account Deleted event (by id) was delivered for it, naming its types. No check that no
    usage event of it follows its Account Deleted: docs/events.md says a crossing decided from a
    delete in the minute after it may."""
    account_id, doomed = deleter.account_id, deleter.doomed
    erased = Check(
        "account deletion: once its erasure is due, no item names the deleted account (its rate windows aside)"
    )
    kept = Check("account deletion: no create of it a client was acknowledged is left behind")
    refused = Check("account deletion: no create of it first sent after its DELETE was answered was acknowledged")
    announced = Check("account deletion: one Account Deleted event delivered for it (by id), naming its types")
    checks = [erased, kept, refused, announced]
    if deleter.deletion is None or deleter.deleted_after is None:
        erased.violations.append(f"{account_id} was never deleted: {deleter.failed or 'no step reached'}")
        return checks
    entry_key = item_key(keys.DELETIONS_PK, account_id)
    for _ in range(2):  # a deletion its request did not fence is fenced by the first sweep
        entry = dynamodb.get_item(TableName=table, Key=entry_key, ConsistentRead=True).get("Item")
        if entry is None:
            break  # erased already: a sweep ran long enough after the fence
        fenced_ms = int(entry.get("fenced_ms", {}).get("N", "0"))
        if fenced_ms:
            due = datetime.fromtimestamp(fenced_ms / 1000, UTC) + timedelta(seconds=HEAL_QUIET_SECONDS + 1)
            if clock.now() < due:  # forward only
                clock.set(due)
        runtime.run_schedules_now()
    left: list[str] = []
    found_keys: set[tuple[str, str]] = set()
    request: dict[str, Any] = {
        "TableName": table,
        "ConsistentRead": True,
        "ProjectionExpression": "#pk, #sk",
        "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
    }
    while True:
        page = dynamodb.scan(**request)
        for item in page.get("Items", []):
            pk, sk = item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]
            found_keys.add((pk, sk))
            named = account_id in re.split(r"[#@]", pk) or account_id in re.split(r"[#@]", sk)
            if named and not pk.startswith(keys.RATE_PREFIX):
                left.append(f"{pk} / {sk}")
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    erased.checked = len(found_keys)
    erased.violations += [f"left: {found}" for found in sorted(left)]
    for account in doomed:
        for resource_id in sorted(outcomes.created.get(account.name, set())):
            kept.expect(
                (keys.resources_pk(account.quota), keys.resource_sk(resource_id)) not in found_keys,
                f"{account.name}/{resource_id} left behind",
            )
            sent = outcomes.first_sent.get(resource_id, 0.0)
            refused.expect(
                sent <= deleter.deleted_after,
                f"{account.name}/{resource_id} acknowledged, first sent "
                f"{sent - deleter.deleted_after:.3f} s after the DELETE was answered",
            )
    types = sorted({account.resource_type for account in doomed} - {DEFAULT_RESOURCE_TYPE})
    deadline = time.monotonic() + timeout
    while True:
        events = [
            dict(event["detail"])
            for event in subscriber.receive()
            if event["detail-type"] == AccountDeleted.DETAIL_TYPE
        ]
        ids = {str(event["eventId"]) for event in events if event["accountId"] == account_id}
        if ids or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    announced.checked = len(events)
    announced.expect(len(ids) == 1, f"{account_id}: {len(ids)} Account Deleted event(s): {sorted(ids)}")
    for event in events:
        if event["accountId"] != account_id:
            announced.violations.append(f"an Account Deleted event for {event['accountId']}, never deleted")
        elif event["resourceTypes"] != [DEFAULT_RESOURCE_TYPE, *types]:
            announced.violations.append(f"{account_id}: its event names the types {event['resourceTypes']}")
    return checks


def _put_account(api: LimitsClient, account: Account) -> None:
    """Its limit (and a periodic quota's period), retried with one key as a careful admin does."""
    key = str(uuid.uuid4())
    for _ in range(20):
        try:
            account.set_limit(api, account.limit, key=key)
            return
        except HybridCounterError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"could not set the limit of {account.name}")


def wait_for_quiescence(
    runtime: LocalRuntime,
    dynamodb: Any,
    table: str,
    accounts: list[Account],
    timeout: float,
    plan: PeriodPlan | None = None,
) -> float | None:
    """The moment DLQ 1 is empty and nothing is pending outside fatal accounts, twice in a row."""
    sqs = runtime.client("sqs")
    dlq1 = runtime.outputs["Dlq1Url"]
    deadline = time.monotonic() + timeout
    calm_since: float | None = None
    while time.monotonic() < deadline:
        attributes = sqs.get_queue_attributes(
            QueueUrl=dlq1, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        in_flight = int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )
        settled = in_flight == 0 and all(
            snapshot(dynamodb, table, quota).pending == 0 for a in accounts if not a.fatal for quota in views(a, plan)
        )
        if settled:
            if calm_since is not None and time.monotonic() - calm_since >= 1.0:
                return calm_since
            calm_since = calm_since or time.monotonic()
        else:
            calm_since = None
        time.sleep(0.25)
    return None


def quiescence_check(quiet: float | None) -> Check:
    check = Check("quiescence reached (DLQ 1 drained, nothing pending)")
    check.expect(quiet is not None, "the system did not settle within the timeout")
    return check


def end_state_checks(
    api: LimitsClient,
    runtime: LocalRuntime,
    dynamodb: Any,
    table: str,
    accounts: list[Account],
    outcomes: ClientOutcomes,
    plan: PeriodPlan | None = None,
) -> list[Check]:
    """Once quiet. A periodic quota's counting checks hold per period (the API's counts are its
    current period's), and its records are checked over all its periods together."""
    exact = Check("eventual = live for every account and type (API and table)")
    stored = Check("before any heal, the stored admitted = live + the slots its held leases account for")
    answers = Check("no delete of a live resource was answered 404 unless another client deleted it")
    answers.expect(not outcomes.wrong_404s, f"wrong 404s: {outcomes.wrong_404s[:5]}")
    exists = Check("every acknowledged, undeleted resource exists exactly once")
    gone = Check("no deleted resource survives")
    phantom = Check("every resource in the table was acknowledged (or its create's outcome was unknown)")
    for account in accounts:
        shots = [snapshot(dynamodb, table, quota) for quota in views(account, plan)]
        acknowledged = outcomes.acknowledged.get(account.name, set())
        unresolved = outcomes.unresolved.get(account.name, set())
        deleted = outcomes.deleted.get(account.name, set())
        if not account.fatal:
            view = read_carefully(partial(account.usage, api), f"GET {account.path}")
            current = account.quota if plan is None or account.period is None else None
            if current is None:
                assert plan is not None
                current = account.quota.in_period(account.window(plan.clock.now()))
            for shot in shots:
                held, unknown = units_held_by_leases(shot)
                stored.expect(
                    shot.live_units + held <= shot.admitted <= shot.live_units + held + unknown,
                    f"{shot.quota}: admitted {shot.admitted}, live units {shot.live_units}, "
                    f"{len(shot.leases)} lease(s) holding {held} unit(s) (and up to {unknown} more): "
                    f"{describe_leases(shot)}",
                )
                api_eventual = view.eventual if shot.quota == current else shot.eventual
                exact.expect(
                    api_eventual == shot.live_units == shot.eventual,
                    f"{shot.quota}: API eventual {api_eventual}, table eventual {shot.eventual}, "
                    f"live units {shot.live_units}",
                )
        records = merged(account.quota, shots)
        for resource_id in acknowledged - unresolved:
            exists.expect(
                resource_id in records.live,
                f"{account.name}/{resource_id} acknowledged but missing (item: {_describe(records, resource_id)})",
            )
        if account.fatal:
            continue  # its counting never succeeds, so its soft-deleted resources are never removed
        for resource_id in deleted - unresolved:
            gone.expect(resource_id not in records.existing, f"{account.name}/{resource_id} deleted but present")
        for resource_id in records.existing | set(records.tombstones):
            phantom.expect(
                resource_id in acknowledged | unresolved | deleted,
                f"{account.name}/{resource_id} exists but no client was told it was created",
            )
    return [exact, stored, answers, exists, gone, phantom]


def merged(quota: Quota, shots: Sequence[Snapshot]) -> Snapshot:
    """The records of several snapshots (a periodic quota's periods) as one snapshot's."""
    if len(shots) == 1:
        return shots[0]
    records = Snapshot(quota)
    for shot in shots:
        records.live |= shot.live
        records.existing |= shot.existing
        records.tombstones.update(shot.tombstones)
        records.items.update(shot.items)
    return records


def amounts_check(
    dynamodb: Any, table: str, accounts: list[Account], outcomes: ClientOutcomes, plan: PeriodPlan | None = None
) -> Check:
    """Each resource that exists holds an amount a client asked it to hold: its create's, or one of
    its resizes' (a resize applied twice, or half applied, holds another)."""
    check = Check("every resource holds an amount a client asked for (its create's or a resize's)")
    for account in accounts:
        shot = merged(account.quota, [snapshot(dynamodb, table, quota) for quota in views(account, plan)])
        for resource_id in sorted(shot.existing):
            amount = resources.amount_of(shot.items[resource_id])
            asked = outcomes.asked.get(resource_id, set())
            check.expect(amount in asked, f"{account.name}/{resource_id} holds {amount}, asked {sorted(asked)}")
    return check


def settled_usage_events(
    runtime: LocalRuntime,
    dynamodb: Any,
    table: str,
    accounts: list[Account],
    subscriber: Subscriber,
    timeout: float,
    plan: PeriodPlan | None = None,
) -> tuple[dict[Quota, QuotaEvents], StreamTruth]:
    """Each quota's outbox, once every crossing a limit change makes is decided (the consumer
    decides it after the change's record) and the publisher delivered what the outbox holds (or
    the timeout passed: the checks then say what is missing); and the stream's truth to check them
    against (chaos/usage_events.py)."""
    deadline = time.monotonic() + timeout
    while True:
        quotas = {}
        for account in accounts:
            for quota in views(account, plan):  # a period's crossings are its own (docs/periods.md)
                shot = snapshot(dynamodb, table, quota)
                if quota.period and shot.shards == 0:
                    continue  # a period no client created in: never opened, no limit, nothing to announce
                quotas[quota] = QuotaEvents(shot.events, shot.limit_changes, shot.eventual, shot.limit)
        written = {event["eventId"] for q in quotas.values() for event in [*q.crossings, *q.limit_changes]}
        received = {str(event["detail"]["eventId"]) for event in subscriber.receive()}
        if time.monotonic() > deadline or (written <= received and all(q.settled for q in quotas.values())):
            break
        time.sleep(0.2)
    records = stream_records(runtime.client("dynamodbstreams"), runtime.outputs["StreamArn"])
    return quotas, replay(records, quotas)


def lease_resolutions(shot: Snapshot) -> list[tuple[Lease, Settlement]]:
    """Each of the account's leases with how a heal would settle it now, from its resource item."""
    return [(lease, resolution(lease, _lease_resource(shot, lease), expired=False)) for lease in shot.leases]


def units_held_by_leases(shot: Snapshot) -> tuple[int, int]:
    """How many units the account's leases hold beyond its live resources' amounts: a reservation
    whose put never landed, a deletion whose soft delete landed, a growth whose write never landed,
    a shrink whose write landed; a heal would release exactly these. And how many more they may
    hold: a resize's lease whose resource a later resize changed (or that is gone) hides whether
    its own write landed (functions/core/leases.py, _resize_resolution), so its units may be held
    or not until a quiet heal sets the counters to the truth."""
    held = unknown = 0
    for lease, settlement in lease_resolutions(shot):
        held += max(0, -settlement.admitted)
        if _resize_outcome_hidden(lease, settlement, _lease_resource(shot, lease)):
            unknown += lease.units
    return held, unknown


def _resize_outcome_hidden(lease: Lease, settlement: Settlement, resource: Resource | None) -> bool:
    """A resize's lease dropped without proof that its write landed: a later resize (or the
    resource's removal) hides it."""
    if lease.kind not in (LeaseKind.GROWTH, LeaseKind.SHRINK) or settlement != DROP:
        return False
    return resource is None or resource.resize_token != lease.token


def describe_leases(shot: Snapshot) -> str:
    """Every lease as the stored-admitted check judged it, and each shard item's admitted: what a
    violation needs to be told apart (a write in flight, a dead lease, a slot held by none)."""
    lines = []
    for lease, settlement in lease_resolutions(shot):
        resource = _lease_resource(shot, lease)
        if resource is None:
            item = "no item"
        else:
            state = "tombstone" if resource.tombstone else "deleted" if resource.deleted else "exists"
            item = (
                f"item {state}, request token {'matches' if resource.request_token == lease.token else 'differs'}, "
                f"delete token {'matches' if resource.delete_token == lease.token else 'differs'}"
            )
        lines.append(
            f"{lease.kind.value} {lease.resource_id} on shard {lease.shard}, token {lease.token[:6]}, "
            f"taken {lease.taken_at}: {item} -> {_settlement_name(lease, settlement)}"
        )
    shards = ", ".join(f"shard {shard}: {admitted}" for shard, admitted in sorted(shot.admitted_by_shard.items()))
    return "; ".join([*lines, f"admitted by shard: {shards}"])


def _settlement_name(lease: Lease, settlement: Settlement) -> str:
    # Settlements are compared by value (a release and a finished deletion are the same change),
    # in the lease's units.
    units = f"{lease.units} unit(s)"
    if settlement == DROP:
        return "drop (holds nothing)"
    if lease.kind in (LeaseKind.RESERVATION, LeaseKind.GROWTH):
        release = in_units(RELEASE_RESERVATION, lease.units)
        return f"release reservation (holds {units})" if settlement == release else str(settlement)
    if settlement == in_units(FINISH_DELETION, lease.units):
        return f"finish {lease.kind.value} (holds {units})"
    undo = in_units(UNDO_DELETION, lease.units)
    return f"undo {lease.kind.value} (holds nothing)" if settlement == undo else str(settlement)


def _lease_resource(shot: Snapshot, lease: Lease) -> Resource | None:
    item = shot.items.get(lease.resource_id) or shot.tombstones.get(lease.resource_id)
    return resource_from_item(to_attributes(item)) if item else None


def _describe(shot: Snapshot, resource_id: str) -> str:
    item = shot.items.get(resource_id)
    if item is None:
        return "none"
    wanted = ("deleted", "counter_processed", "deleted_at", "delete_token", "request_token", "created_at")
    return ", ".join(f"{name}={item[name]}" for name in wanted if name in item)


def dlq2_check(runtime: LocalRuntime, accounts: list[Account]) -> Check:
    """Every DLQ 2 message covers a stream range with a record of a fatal account, and nothing else
    reached DLQ 2."""
    check = Check("DLQ 2 holds only what was injected as fatal")
    sqs, streams = runtime.client("sqs"), runtime.client("dynamodbstreams")
    fatal = {a.quota for a in accounts if a.fatal}
    messages: list[dict[str, Any]] = []
    for _ in range(10):
        batch = sqs.receive_message(QueueUrl=runtime.outputs["Dlq2Url"], MaxNumberOfMessages=10, VisibilityTimeout=30)
        messages += batch.get("Messages", [])
        if not batch.get("Messages"):
            break
    for message in messages:
        try:
            info = parse_failure_message(message["Body"])
        except InvalidFailureMessage:
            check.expect(False, f"unreadable DLQ 2 message {message['MessageId']}")
            continue
        check.expect(
            bool(fatal.intersection(commands.range_quotas(streams, info))),
            f"DLQ 2 range {info.start_sequence_number}..{info.end_sequence_number} holds no injected-fatal record",
        )
    return check


def fatal_work_kept_check(dynamodb: Any, table: str, accounts: list[Account], outcomes: ClientOutcomes) -> Check:
    """The injected-fatal creates are not lost: still pending (uncounted) for the sweeper and for
    operators, whether or not their range reached DLQ 2 (a trimmed range is swept instead)."""
    check = Check("injected-fatal work is kept pending for operators, not lost")
    for account in accounts:
        if not account.fatal:
            continue
        shot = snapshot(dynamodb, table, account.quota)
        for resource_id in outcomes.acknowledged.get(account.name, set()):
            check.expect(resource_id in shot.existing, f"{account.name}/{resource_id} was lost")
        check.expect(shot.eventual == 0, f"{account.name}: counted although every count was made to fail")
    return check


def heal_check(
    dynamodb: Any, table: str, accounts: list[Account], now: datetime, plan: PeriodPlan | None = None
) -> Check:
    """Once quiet, a heal (at `now`, the functions' clock) brings both API-path counters to the live
    count (docs/guarantees.md, 6: self-healing); a periodic quota's, each of its periods' that opened."""
    check = Check("after healing, best-effort = admitted = live")
    store = DynamoHealingStore(DynamoTable(dynamodb, table))
    for account in accounts:
        if account.fatal:
            continue
        for quota in views(account, plan):
            if quota.period and snapshot(dynamodb, table, quota).shards == 0:
                continue  # a period no client created in: never opened, nothing to heal
            outcome = heal_account(store, quota, now, timedelta(0)).outcome
            shot = snapshot(dynamodb, table, quota)
            check.expect(
                outcome in (HealOutcome.HEALED, HealOutcome.EXACT)
                and shot.best_effort_net == shot.admitted == shot.live_units,
                f"{quota}: heal {outcome.value}, best-effort {shot.best_effort_net}, "
                f"admitted {shot.admitted}, live units {shot.live_units}",
            )
    return check


def period_checks(
    dynamodb: Any,
    table: str,
    accounts: list[Account],
    outcomes: ClientOutcomes,
    plan: PeriodPlan,
    sampler: Sampler,
    crossed: int,
    moves: list[str],
) -> tuple[dict[str, Any], list[Check]]:
    """What only periodic quotas and a clock over midnight show, once quiet: the midnights crossed
    under load; each record in the period of its admission's time (the clock's period between its
    create's first attempt and its answer); each keyed retry answered its record; each settled
    period's total as it settled. And the figures: per period, records, units and eventual."""
    over = Check(f"periodic: the clock crossed {plan.boundaries} midnight(s) while the clients worked")
    over.expect(crossed >= plan.boundaries, f"crossed {crossed}")
    admitted_in = Check("periodic: every record is in the period of its create's admission (its period_id)")
    retried = Check("periodic: a keyed retry (also in a later period) answers its record, never another one")
    retried.checked = outcomes.statuses.get("replay 2xx", 0)
    for wrong in outcomes.wrong_replays:
        retried.expect(False, wrong)
    final = Check("periodic: once quiet, each settled period's eventual total is what it settled at")
    figures: dict[str, Any] = {"midnights crossed while the clients worked": crossed, "clock": moves}
    per_period: dict[str, list[int]] = {period_id: [0, 0, 0] for period_id in plan.ids}
    for account in accounts:
        if account.period is None:
            continue
        for quota in views(account, plan):
            shot = snapshot(dynamodb, table, quota)
            tally = per_period[quota.period]
            tally[0] += len(shot.existing) + len(shot.tombstones)
            tally[1] += shot.live_units
            tally[2] += shot.eventual
            if quota in sampler.settled_totals:
                settled = sampler.settled_totals[quota]
                final.expect(shot.eventual == settled, f"{quota}: eventual {shot.eventual}, settled at {settled}")
            for resource_id in shot.existing | set(shot.tombstones):
                sent, answered = outcomes.windows.get(resource_id, ("", ""))
                if not sent:
                    continue  # its create's outcome stayed unknown
                admitted_in.expect(
                    sent <= quota.period <= answered,
                    f"{quota}: {resource_id} created between periods {sent} and {answered}",
                )
    every = Check("periodic: the clients created records in each of the run's periods")
    for period_id, (records, _, _) in per_period.items():
        every.expect(records > 0, f"no record in period {period_id}")
    figures["per period"] = {
        period_id: {"records": records, "live units": units, "eventual": eventual}
        for period_id, (records, units, eventual) in per_period.items()
    }
    figures["settled periods"] = len(sampler.settled_totals)
    figures["keyed retries answered in a later period"] = outcomes.replays_in_a_later_period
    return figures, [over, every, admitted_in, retried, final]


def unseen_ambiguity_checks(
    api: LimitsClient, dynamodb: Any, table: str, accounts: list[Account], outcomes: ClientOutcomes
) -> list[Check]:
    """When the only faults are writes that land and lose their answer, callers must see none of it
    (docs/admission.md): no 5xx, no lease left, the stored counters exact without a heal, and each
    account then admits exactly up to its limit."""
    answers = Check("only ambiguous writes injected: every create and delete answered as if none had failed")
    for outcome, count in outcomes.statuses.items():
        kind, _, status = outcome.partition(" ")
        allowed = {
            "create": {"2xx", "201", "409"},
            "delete": {"204", "404"},
            "resize": {"2xx", "200", "404", "409", "412"},
        }[kind]
        answers.expect(status in allowed, f"{count} x {outcome}")
    answers.expect(not outcomes.unresolved, f"unresolved after retries: {outcomes.unresolved}")
    stored = Check("only ambiguous writes injected: no lease left, stored admitted = eventual = live, no heal")
    admits = Check("only ambiguous writes injected: with its limit raised by 3, each account admits exactly 3")

    def admitted_after_raise(account: Account) -> tuple[Snapshot, list[int | str]]:
        shot = snapshot(dynamodb, table, account.quota)
        attempt(partial(account.set_limit, api, shot.live_units + 3), 200)
        return shot, [attempt(partial(account.create, api, f"after-{index}"), 201).status for index in range(4)]

    # Each account's calls are sequential (its fourth create must find the limit); the accounts are
    # independent quotas, so they go side by side: most of the time is the late answers' wait.
    with ThreadPoolExecutor(max_workers=max(1, len(accounts))) as pool:
        seen = list(pool.map(admitted_after_raise, accounts))
    for account, (shot, statuses) in zip(accounts, seen, strict=True):
        live = shot.live_units
        stored.expect(
            not shot.leases and shot.admitted == shot.eventual == live,
            f"{account.name}: leases {len(shot.leases)}, admitted {shot.admitted}, "
            f"eventual {shot.eventual}, live {live}",
        )
        admits.expect(statuses == [201, 201, 201, 409], f"{account.name}: {statuses}")
    return [answers, stored, admits]


def lambda_traffic(runtime: LocalRuntime) -> dict[str, int]:
    sqs = runtime.client("sqs")
    dlq2 = sqs.get_queue_attributes(
        QueueUrl=runtime.outputs["Dlq2Url"],
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return {
        "stream invocations": runtime.stream_stats.invocations,
        "stream invocations failed": runtime.stream_stats.failed_invocations,
        "records delivered (with retries)": runtime.stream_stats.records_delivered,
        "DLQ 1 messages sent": runtime.stream_stats.sent_to_destination,
        "redrive invocations": runtime.queue_stats.invocations,
        "redrive invocations failed": runtime.queue_stats.failed_invocations,
        "DLQ 1 messages done": runtime.queue_stats.deleted_messages,
        "DLQ 2 messages": int(dlq2["ApproximateNumberOfMessages"]) + int(dlq2["ApproximateNumberOfMessagesNotVisible"]),
    }
