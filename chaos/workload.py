"""The clients of a chaos run: concurrent creates and deletes (with `--amounts`, of random amounts,
and resizes) over HTTP, as careful callers make them.

Every create carries an Idempotency-Key, and a create or delete that fails with a 5xx (or no
answer) is retried with the same key. Clients remember what the API acknowledged, because
afterwards the checks compare that with what exists.

They call the API with the product's client (hybrid_counter_client), made to send one request per
call (local/product.py SINGLE_ATTEMPT): the run counts every answer, and retries as written here.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from hybrid_counter_client import Account as AccountUsage
from hybrid_counter_client import AccountDeletion, HybridCounterError, LimitsClient, ResourceType

from functions.core.leases import DEFAULT_TOMBSTONE_RETENTION
from functions.core.model import DEFAULT_RESOURCE_TYPE, Quota, idempotent_resource_id
from functions.core.periods import parse_period

RETRIES = 8


@dataclass
class Account:
    """What the clients work on: one limit of an account, its default type's unless named. An
    account with several types is several of these, which the clients race across."""

    account_id: str
    limit: int
    hot: bool = False
    fatal: bool = False  # every transaction on it is made to fail: its records must end in DLQ 2
    resource_type: str = DEFAULT_RESOURCE_TYPE
    # A periodic quota's period (`day`: UTC days, docs/periods.md); None: a holding.
    period: str | None = None

    def window(self, moment: datetime) -> str:
        """The id of its period holding `moment` (a periodic quota's only)."""
        assert self.period is not None, f"{self.name} is a holding"
        return parse_period(self.period, None).window_at(moment).id

    @property
    def quota(self) -> Quota:
        return Quota(self.account_id, self.resource_type)

    @property
    def name(self) -> str:
        """How outcomes and reports name it: the account, and its type when not the default."""
        return str(self.quota)

    @property
    def path(self) -> str:
        """Its route: the account's for the default type, the type's otherwise."""
        account = f"/accounts/{self.account_id}"
        return account if self.quota.is_default else f"{account}/types/{self.resource_type}"

    def create(self, client: LimitsClient, name: str, key: str | None = None, amount: int | None = None) -> str:
        """Create a resource of its limit (of `amount` units; None: the body a client before amounts
        sent, 1 unit); its id."""
        if self.quota.is_default:
            return client.create_resource(self.account_id, name, idempotency_key=key, amount=amount).resource_id
        return client.create_typed_resource(
            self.account_id, self.resource_type, name, idempotency_key=key, amount=amount
        ).resource_id

    def version(self, client: LimitsClient, resource_id: str) -> tuple[str | None, int]:
        """The resource's ETag (its version, for a resize's If-Match) and amount, as GET on it answers."""
        if self.quota.is_default:
            found = client.get_resource(self.account_id, resource_id)
            return found.etag, found.amount
        typed = client.get_typed_resource(self.account_id, self.resource_type, resource_id)
        return typed.etag, typed.amount

    def resize(self, client: LimitsClient, resource_id: str, amount: int, if_match: str | None, key: str) -> None:
        """PATCH the resource to `amount` units, only at version `if_match`, with `key` as its
        Idempotency-Key."""
        if self.quota.is_default:
            client.resize_resource(self.account_id, resource_id, amount, if_match=if_match, idempotency_key=key)
        else:
            client.resize_typed_resource(
                self.account_id, self.resource_type, resource_id, amount, if_match=if_match, idempotency_key=key
            )

    def delete(self, client: LimitsClient, resource_id: str) -> None:
        if self.quota.is_default:
            client.delete_resource(self.account_id, resource_id)
        else:
            client.delete_typed_resource(self.account_id, self.resource_type, resource_id)

    def usage(self, client: LimitsClient) -> AccountUsage | ResourceType:
        """Its limit and counts, as GET on its route answers them."""
        if self.quota.is_default:
            return client.get_account(self.account_id)
        return client.get_type(self.account_id, self.resource_type)

    def set_limit(self, client: LimitsClient, limit: int, key: str | None = None) -> None:
        """Its limit (and, for a periodic quota, its period: a PUT without one keeps it)."""
        if self.quota.is_default:
            client.put_account(self.account_id, limit=limit, idempotency_key=key, period=self.period)
        else:
            client.put_type_limit(
                self.account_id, self.resource_type, limit=limit, idempotency_key=key, period=self.period
            )


@dataclass
class ClientOutcomes:
    """What the API answered the clients: the creates and deletes it acknowledged per account (and
    type: keyed by `Account.name`), what stayed unknown, every status; shared by the client threads."""

    acknowledged: dict[str, set[str]] = field(default_factory=dict)  # created (201/200), not deleted
    created: dict[str, set[str]] = field(default_factory=dict)  # created (201/200), deleted since or not
    deleted: dict[str, set[str]] = field(default_factory=dict)  # deletes acknowledged (204 or 404 on retry)
    unresolved: dict[str, set[str]] = field(default_factory=dict)  # outcome unknown after all retries
    deleting: Counter[str] = field(default_factory=Counter)  # resource ids with a delete in progress
    # A delete answered 404 for a resource that was live when it asked, that no other client was
    # deleting and that no earlier attempt of its own may have deleted: the answer hid what happened.
    wrong_404s: list[str] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    creates_per_type: Counter[str] = field(default_factory=Counter)  # acknowledged creates by resource type
    # Creates (and growing resizes) answered 409 LimitExceeded, by quota, and the units they asked for.
    refused: Counter[str] = field(default_factory=Counter)
    refused_units: Counter[str] = field(default_factory=Counter)
    # Every amount a client asked a resource to hold (its create's, its resizes'), by resource id.
    asked: dict[str, set[int]] = field(default_factory=dict)
    # A periodic quota's records (`--periods`): the periods of the clock when its create was first
    # sent and when it was acknowledged (its admission's time is between), by resource id; each
    # acknowledged create's key and amount, by quota, for the clients' keyed retries later; and
    # the keyed retries that were not answered the record they named.
    windows: dict[str, tuple[str, str]] = field(default_factory=dict)
    keyed: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)  # key, amount, period
    wrong_replays: list[str] = field(default_factory=list)
    replays_in_a_later_period: int = 0  # keyed retries answered in a period after their record's
    # The clock the periods are told by (the local runtime's, shifted over midnight); None: no periods.
    clock: Callable[[], datetime] | None = None
    # Accounts the plans' admin deletes (`--plans`), from just before its DELETE is sent: a 404 on
    # them is then the expected answer, not one that hid what happened.
    deleted_accounts: set[str] = field(default_factory=set)
    # When each create was first sent (time.monotonic()), by resource id: none sent after its
    # account's DELETE was answered may be acknowledged.
    first_sent: dict[str, float] = field(default_factory=dict)
    retries: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, kind: str, status: int | str) -> None:
        with self.lock:
            self.statuses[f"{kind} {status}"] += 1

    def live(self, account: Account) -> list[str]:
        """The resources of `account` acknowledged and not deleted, in id order, as of now."""
        with self.lock:
            return sorted(self.acknowledged.get(account.name, set()))

    def reached(self, answers: int, stop: threading.Event) -> bool:
        """Waits until the clients have been answered `answers` times (the admins beside them act
        at marks of their progress); False if `stop` is set first."""
        while True:
            with self.lock:
                if sum(self.statuses.values()) >= answers:
                    return True
            if stop.wait(0.05):
                return False


NO_ANSWER = "no-answer"


@dataclass(frozen=True)
class Answer:
    """One request's answer: its status (NO_ANSWER when none came), the error envelope's code, and
    the call's result on a success."""

    status: int | str
    code: str | None = None
    value: Any = None

    def ok(self) -> bool:
        return isinstance(self.status, int) and self.status < 300

    def undecided(self) -> bool:
        """A 5xx or no answer: the request may or may not have landed."""
        return not isinstance(self.status, int) or self.status >= 500


def attempt(call: Callable[[], Any], success: int) -> Answer:
    """One request (the client makes one per call): `success` and its result, or the error's answer."""
    try:
        return Answer(success, value=call())
    except HybridCounterError as error:
        return Answer(NO_ANSWER if error.status is None else error.status, error.code)


class Gate:
    """Lets the clients' operations through while open and, when given a ceiling, until that many
    have entered; `close` waits until none is in flight. A chaos run over midnights moves its clock
    while the gate is closed (no request could take a live lease for a stale one) and shares the
    operations between its days with the ceiling."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._open = True
        self._in_flight = 0
        self._ceiling: int | None = None
        self.entered = 0

    @contextmanager
    def passage(self) -> Iterator[None]:
        with self._condition:
            self._condition.wait_for(lambda: self._open and (self._ceiling is None or self.entered < self._ceiling))
            self._in_flight += 1
            self.entered += 1
        try:
            yield
        finally:
            with self._condition:
                self._in_flight -= 1
                self._condition.notify_all()

    def close(self) -> None:
        with self._condition:
            self._open = False
            self._condition.wait_for(lambda: self._in_flight == 0)

    def open(self) -> None:
        with self._condition:
            self._open = True
            self._condition.notify_all()

    def let_through(self, ceiling: int | None) -> None:
        """At most `ceiling` operations in all from now on (None: no ceiling)."""
        with self._condition:
            self._ceiling = ceiling
            self._condition.notify_all()


# A periodic quota's usage records (`--periods`): each create takes 1..PERIOD_MAX_AMOUNT units.
PERIOD_MAX_AMOUNT = 4
# The periods' length (the runs' periodic quotas are days), and how long before its record expires
# a key is last retried (a retry's attempts take a few seconds at most).
PERIOD_LENGTH = timedelta(days=1)
REPLAY_MARGIN = timedelta(seconds=30)


def _window_start(window_id: str) -> datetime:
    return datetime.strptime(window_id, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def run_clients(
    api: LimitsClient,
    accounts: list[Account],
    operations: int,
    clients: int,
    seed: int,
    outcomes: ClientOutcomes,
    max_amount: int | None = None,
    gate: Gate | None = None,
) -> None:
    """`operations` creates and deletes, by `clients` threads. With `max_amount`, each create takes
    a random amount 1..max_amount, and some operations resize a live resource to a random amount
    in that range instead (growing or shrinking it), racing the deletes and each other. Without it,
    the same seed makes the same operations as before amounts (no random draw is added). A
    periodic quota's operations are `periodic_operation`'s. Each operation goes through `gate`."""
    remaining = [operations]
    gate = gate or Gate()
    lock = threading.Lock()

    def take() -> bool:
        with lock:
            if remaining[0] <= 0:
                return False
            remaining[0] -= 1
            return True

    def client(index: int) -> None:
        rng = random.Random(f"{seed}/client/{index}")  # noqa: S311 - a reproducible workload
        while take():
            hot = [a for a in accounts if a.hot]
            account = rng.choice(hot) if hot and rng.random() < 0.4 else rng.choice(accounts)
            with gate.passage():
                if account.period is not None:
                    periodic_operation(api, account, rng, outcomes)
                    continue
                live = outcomes.live(account)
                if live and rng.random() < 0.4:
                    delete(api, account, rng.choice(live), outcomes)
                elif max_amount is not None and live and rng.random() < 0.4:
                    key = str(uuid.UUID(int=rng.getrandbits(128)))
                    resize(api, account, rng.choice(live), rng.randint(1, max_amount), key, outcomes)
                elif max_amount is not None:
                    amount = rng.randint(1, max_amount)
                    create(api, account, f"k-{uuid.UUID(int=rng.getrandbits(128))}", outcomes, amount)
                else:
                    create(api, account, f"k-{uuid.UUID(int=rng.getrandbits(128))}", outcomes)

    threads = [threading.Thread(target=client, args=(i,), name=f"chaos-client-{i}") for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class LimitChanger(threading.Thread):
    """An admin beside the clients who changes limits: while they work, at even steps of their
    progress, in turn, lowers a quota below its limit to its usage or under it (100% crossed with
    no count moving), raises one well above its usage, sets one back to what it was; and once they
    stopped (`finish`), lowers one more, whose crossing no later count can announce instead
    (docs/events.md, "Limit Changed")."""

    KINDS = ("lower", "raise", "restore")

    def __init__(
        self,
        api: LimitsClient,
        accounts: list[Account],
        outcomes: ClientOutcomes,
        operations: int,
        changes: int,
        seed: int,
        unit: int = 1,
        gate: Gate | None = None,
    ) -> None:
        super().__init__(name="chaos-limit-changer", daemon=True)
        self._gate = gate or Gate()  # each change goes through it, as the clients' operations do
        self._api, self._accounts, self._outcomes, self._changes = api, accounts, outcomes, changes
        self._unit = unit  # a raise adds this many times 4..20 units (resources of several units each)
        self._marks = [operations * (index + 1) // changes for index in range(changes - 1)]
        self._rng = random.Random(f"{seed}/limits")  # noqa: S311 - a reproducible workload
        self.stop = threading.Event()
        self.made: list[str] = []  # "<quota> <old> -> <new>", as the admin asked

    def run(self) -> None:
        for index, mark in enumerate(self._marks):
            if not self._outcomes.reached(mark, self.stop):
                return
            with self._gate.passage():
                self._change(self.KINDS[index % len(self.KINDS)])

    def finish(self, only: list[Account] | None = None) -> None:
        """Once the clients stopped: the last changes, every quota that can be lowered (of `only`,
        if given) lowered to its usage or under it. The crossings such a change makes are made by no
        count; every quota, not one, so that a run has some (one quota's counter may already stand
        past every threshold its lowering reaches, and then it makes none)."""
        self.stop.set()
        self.join()
        if only is not None:
            self._accounts = only
        if self._changes:
            self._change("lower", every=True)

    def _change(self, kind: str, every: bool = False) -> None:
        """Change the first quota (in a random order) this kind of change applies to, or `every` one."""
        for account in self._rng.sample(self._accounts, len(self._accounts)):
            view = self._get(account)
            if view is None:
                continue
            used, limit = view.used, view.limit
            # Lowered to the best-effort count or under it: at or under the live units, whatever
            # the eventual counter says (a planted bug that inflates it must not stop the lowering).
            if kind == "lower" and 0 < view.best_effort < limit:
                new = max(1, view.best_effort - self._rng.randint(0, 2))
            elif kind == "raise":
                new = used + self._rng.randint(4, 20) * self._unit
            elif kind == "restore":
                new = account.limit
            else:
                continue
            if new != limit and self._put(account, new):
                self.made.append(f"{account.name} {limit} -> {new}")
                if not every:
                    return

    def _get(self, account: Account) -> AccountUsage | ResourceType | None:
        for _ in range(RETRIES):
            answer = attempt(lambda: account.usage(self._api), 200)
            if answer.ok():
                return answer.value  # type: ignore[no-any-return]
            time.sleep(0.05)
        return None

    def _put(self, account: Account, limit: int) -> bool:
        """Retried on a 5xx or no answer, as the careful clients do, with one Idempotency-Key over
        its attempts: a retry of a PUT that landed and lost its answer is that PUT, and changes
        nothing again (docs/admission.md, "Limit changes")."""
        key = str(uuid.uuid4())
        for _ in range(RETRIES):
            answer = attempt(lambda: account.set_limit(self._api, limit, key), 200)
            if not answer.undecided():
                return answer.ok()
            time.sleep(0.05)
        return False


def periodic_operation(api: LimitsClient, account: Account, rng: random.Random, outcomes: ClientOutcomes) -> None:
    """One operation on a periodic quota (`--periods`): a refund (a delete) of a record, mostly of
    the current period's (within its period it frees its units; after it, 409 PeriodClosed); a
    keyed retry of an earlier create (the same Idempotency-Key and body, often in a later period:
    it must answer that record, in its first period); else a create of 1..PERIOD_MAX_AMOUNT units."""
    assert outcomes.clock is not None, "a periodic quota needs the run's clock"
    now = outcomes.clock()
    current = account.window(now)
    with outcomes.lock:
        live = sorted(outcomes.acknowledged.get(account.name, set()))
        this_period = [rid for rid in live if outcomes.windows.get(rid, ("", ""))[1] == current]
        # A key names its record until the record expires, a day (the key's window) after its
        # period: later, a create with it is a new record (docs/periods.md). Retried within that only.
        keyed = [
            (key, amount, window)
            for key, amount, window in outcomes.keyed.get(account.name, [])
            if now + REPLAY_MARGIN < _window_start(window) + PERIOD_LENGTH + DEFAULT_TOMBSTONE_RETENTION
        ]
    draw = rng.random()
    if live and draw < 0.25:
        delete(api, account, rng.choice(this_period if this_period and rng.random() < 0.8 else live), outcomes)
    elif keyed and draw < 0.4:
        key, amount, window = rng.choice(keyed)
        replay(api, account, key, amount, outcomes, later=window < current)
    else:
        create(api, account, f"k-{uuid.UUID(int=rng.getrandbits(128))}", outcomes, rng.randint(1, PERIOD_MAX_AMOUNT))


def replay(
    api: LimitsClient, account: Account, key: str, amount: int, outcomes: ClientOutcomes, later: bool = False
) -> None:
    """A create sent again with an acknowledged create's Idempotency-Key and body, as a caller
    whose answer was lost does (later, maybe in the next period): it must answer that record,
    which stays in its first period, counted once. Only for a record no client is deleting (a
    refunded record's key answers otherwise), and none deletes it meanwhile."""
    resource_id = idempotent_resource_id(account.quota, key)
    with outcomes.lock:
        if outcomes.deleting[resource_id] or resource_id not in outcomes.acknowledged.get(account.name, set()):
            return
        outcomes.deleting[resource_id] += 1
    try:
        for attempt_number in range(RETRIES):
            answer = attempt(lambda: account.create(api, key, key, amount), 201)
            outcomes.note("replay", "2xx" if answer.ok() else answer.status)
            if answer.ok() or not answer.undecided():
                if answer.ok() and later:
                    with outcomes.lock:
                        outcomes.replays_in_a_later_period += 1
                if answer.value != resource_id:
                    with outcomes.lock:
                        outcomes.wrong_replays.append(
                            f"{account.name}/{resource_id}: {answer.status} {answer.code or ''} {answer.value or ''}"
                        )
                return
            with outcomes.lock:
                outcomes.retries += 1
            time.sleep(0.02 * (attempt_number + 1))
    finally:
        with outcomes.lock:
            outcomes.deleting[resource_id] -= 1


def create(api: LimitsClient, account: Account, key: str, outcomes: ClientOutcomes, amount: int | None = None) -> None:
    resource_id = idempotent_resource_id(account.quota, key)
    with outcomes.lock:
        outcomes.asked.setdefault(resource_id, set()).add(1 if amount is None else amount)
    sent = account.window(outcomes.clock()) if account.period and outcomes.clock else ""
    with outcomes.lock:
        outcomes.first_sent.setdefault(resource_id, time.monotonic())
    for attempt_number in range(RETRIES):
        answer = attempt(lambda: account.create(api, key, key, amount), 201)
        # The client answers a replay (200: an earlier attempt created it) as it answers a 201; a
        # first attempt with a new key can only create.
        status = "2xx" if answer.ok() and attempt_number else answer.status
        outcomes.note("create", status)
        if answer.ok():
            acknowledged = account.window(outcomes.clock()) if sent and outcomes.clock else ""
            with outcomes.lock:
                outcomes.acknowledged.setdefault(account.name, set()).add(resource_id)
                outcomes.created.setdefault(account.name, set()).add(resource_id)
                outcomes.unresolved.get(account.name, set()).discard(resource_id)
                outcomes.creates_per_type[account.resource_type] += 1
                if sent:
                    outcomes.windows[resource_id] = (sent, acknowledged)
                    outcomes.keyed.setdefault(account.name, []).append((key, 1 if amount is None else amount, sent))
            return
        if answer.status == 409 and answer.code == "LimitExceeded":
            with outcomes.lock:
                outcomes.refused[account.name] += 1
                outcomes.refused_units[account.name] += 1 if amount is None else amount
        if not answer.undecided():
            if attempt_number:  # an earlier try may have created it before failing
                with outcomes.lock:
                    outcomes.unresolved.setdefault(account.name, set()).add(resource_id)
            return  # 409 at the limit, or another answer that a retry would not change
        with outcomes.lock:
            outcomes.retries += 1
            outcomes.unresolved.setdefault(account.name, set()).add(resource_id)
        time.sleep(0.02 * (attempt_number + 1))


def resize(
    api: LimitsClient, account: Account, resource_id: str, amount: int, key: str, outcomes: ClientOutcomes
) -> None:
    """Resize a live resource as a careful caller does: read its version, then PATCH it with that
    version as If-Match and one Idempotency-Key on every attempt, retried on a 5xx or no answer. A
    retry after its own attempt landed is answered the resource as it is; one after another
    caller's resize is 412 and changes nothing (docs/admission.md, "Resizing"). 404: a delete won
    the race; 409 LimitExceeded: fewer units free than the growth, the resource keeps its amount."""
    version: str | None = None
    current = 0
    for attempt_number in range(RETRIES):
        read = attempt(lambda: account.version(api, resource_id), 200)
        if read.ok():
            version, current = read.value
            break
        if not read.undecided():
            outcomes.note("resize", read.status)  # 404: deleted before it was read
            return
        with outcomes.lock:
            outcomes.retries += 1
        time.sleep(0.02 * (attempt_number + 1))
    else:
        return  # never read: nothing was sent
    with outcomes.lock:
        outcomes.asked.setdefault(resource_id, set()).add(amount)
    for attempt_number in range(RETRIES):
        answer = attempt(lambda: account.resize(api, resource_id, amount, version, key), 200)
        outcomes.note("resize", "2xx" if answer.ok() and attempt_number else answer.status)
        if answer.status == 409 and answer.code == "LimitExceeded":
            with outcomes.lock:  # the growth, from the amount at the version it was sent for
                outcomes.refused[account.name] += 1
                outcomes.refused_units[account.name] += amount - current
        if not answer.undecided():
            return
        with outcomes.lock:
            outcomes.retries += 1
        time.sleep(0.02 * (attempt_number + 1))


def fill(api: LimitsClient, accounts: list[Account], outcomes: ClientOutcomes) -> None:
    """Create in each of `accounts`, one unit at a time, until its limit refuses a create."""
    for account in accounts:
        for index in range(2 * account.limit):  # bounded: a quota never refusing is for the checks to tell
            refused = outcomes.refused[account.name]
            create(api, account, f"fill-{index}", outcomes)
            if outcomes.refused[account.name] > refused:
                break


def shrink_one_each(api: LimitsClient, accounts: list[Account], outcomes: ClientOutcomes) -> None:
    """Shrink one live resource of two units or more by a unit in each of `accounts`."""
    for account in accounts:
        for resource_id in outcomes.live(account):
            read = attempt(partial(account.version, api, resource_id), 200)
            if read.ok() and read.value[1] >= 2:
                resize(api, account, resource_id, read.value[1] - 1, f"shrink-{resource_id}", outcomes)
                break


def drain(api: LimitsClient, accounts: list[Account], outcomes: ClientOutcomes) -> None:
    """Delete every resource the clients left live in `accounts`, one by one."""
    for account in accounts:
        for resource_id in outcomes.live(account):
            delete(api, account, resource_id, outcomes)


def delete(api: LimitsClient, account: Account, resource_id: str, outcomes: ClientOutcomes) -> None:
    with outcomes.lock:
        others = outcomes.deleting[resource_id] > 0  # another client may win the race: its 404 is fair
        outcomes.deleting[resource_id] += 1
    try:
        for attempt_number in range(RETRIES):
            answer = attempt(lambda: account.delete(api, resource_id), 204)
            outcomes.note("delete", answer.status)
            if answer.status == 404:
                _judge_404(outcomes, account, resource_id, others, earlier_attempts=attempt_number)
            if answer.ok() or (answer.status == 404 and attempt_number > 0):
                with outcomes.lock:
                    outcomes.acknowledged[account.name].discard(resource_id)
                    outcomes.deleted.setdefault(account.name, set()).add(resource_id)
                return
            if answer.code == "PeriodClosed" and attempt_number > 0:
                break  # its period ended since an attempt that may have refunded it: unknown
            if not answer.undecided():
                return  # 404 on the first try: another client deleted it first
            with outcomes.lock:
                outcomes.retries += 1
            time.sleep(0.02 * (attempt_number + 1))
        with outcomes.lock:  # gave up: it may or may not be deleted
            outcomes.acknowledged[account.name].discard(resource_id)
            outcomes.unresolved.setdefault(account.name, set()).add(resource_id)
    finally:
        with outcomes.lock:
            outcomes.deleting[resource_id] -= 1


def _judge_404(
    outcomes: ClientOutcomes, account: Account, resource_id: str, others: bool, earlier_attempts: int
) -> None:
    """A 404 is legitimate when the resource was not live: another client deleted it (or was
    deleting it), or an earlier attempt of this delete (answered 5xx or not at all) landed; or its
    account is being deleted (every create and GET of it is 404 from its fence on: docs/plans.md)."""
    with outcomes.lock:
        if account.account_id in outcomes.deleted_accounts:
            return
        deleted_by_someone = resource_id in outcomes.deleted.get(account.name, set())
        racing = others or outcomes.deleting[resource_id] > 1
        if not (earlier_attempts or racing or deleted_by_someone):
            outcomes.wrong_404s.append(f"{account.name}/{resource_id}")


# `--plans` (docs/chaos.md): the named types of every ordinary account take their limits from one
# of these plans; the default type keeps its own (it is never a plan's).
PLANS = ("plan-a", "plan-b")
# How long a grant the plan changer gives stands: it ends while the clients work, so creates find
# it ended before any sweep does (and the end of the run's sweep ends those left).
GRANT_SECONDS = 2.0


class PlanChanger(threading.Thread):
    """An admin who manages plans beside the clients: at even steps of their progress, in turn,
    changes a plan's limit of one type (lowered to below some accounts' usage, or raised), moves
    an account to the other plan, gives a type an expiring grant (an override that ends within
    seconds), and returns a type's override to its plan; once they stopped (`finish`), changes
    every plan once more, so that an account whose type returned to its plan earlier must take a
    later version too. `plans`: each plan's quotas as last PUT; `made`: what it did."""

    KINDS = ("change", "switch", "grant", "return")

    def __init__(
        self,
        api: LimitsClient,
        accounts: list[Account],
        outcomes: ClientOutcomes,
        operations: int,
        changes: int,
        seed: int,
        plans: dict[str, dict[str, int]],
        unit: int = 1,
        gate: Gate | None = None,
    ) -> None:
        super().__init__(name="chaos-plan-changer", daemon=True)
        self._gate = gate or Gate()
        self._api, self._accounts, self._outcomes = api, accounts, outcomes
        self._steps = [
            (operations * (index + 1) // (changes + 1), self.KINDS[index % len(self.KINDS)]) for index in range(changes)
        ]
        self._rng = random.Random(f"{seed}/plans")  # noqa: S311 - a reproducible workload
        self._unit = unit
        self.plans = plans
        self.stop = threading.Event()
        self.made: list[str] = []
        self.failed: list[str] = []

    def run(self) -> None:
        try:
            while self._steps:
                mark = self._steps[0][0]
                if not self._outcomes.reached(mark, self.stop):
                    return
                with self._gate.passage():
                    self._act(self._steps.pop(0)[1])
        except Exception as error:  # an answer no careful admin expects: the run's checks report it
            self.failed.append(f"{type(error).__name__}: {error}")

    def finish(self) -> None:
        """Once the clients stopped: the steps whose marks they did not reach (a client that met
        a fault answers fewer times), every override returned to its plan, then every plan
        changed, which must then reach every type."""
        self.stop.set()
        self.join()
        try:
            while self._steps and not self.failed:
                self._act(self._steps.pop(0)[1])
            while self._return_an_override():
                pass
            for plan in sorted(self.plans):
                self._change(plan)
        except Exception as error:  # as in `run`
            self.failed.append(f"{type(error).__name__}: {error}")

    def _act(self, kind: str) -> None:
        if kind == "change":
            self._change(self._rng.choice(sorted(self.plans)))
        elif kind == "switch":
            account_id = self._rng.choice(sorted({account.account_id for account in self._accounts}))
            on = retried(lambda: self._api.get_account(account_id)).plan
            to = next(plan for plan in sorted(self.plans) if plan != on)
            key = str(uuid.uuid4())  # one over its attempts
            retried(lambda: self._api.put_account(account_id, plan=to, idempotency_key=key))
            self.made.append(f"{account_id}: {on} -> {to}")
        else:
            account = self._rng.choice(self._accounts)
            if kind == "grant":
                view = retried(lambda: self._api.get_type(account.account_id, account.resource_type))
                if view.limit_source == "account":
                    return  # its plan does not give the type: only an override may expire
                ends = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=GRANT_SECONDS + 1)
                limit = view.limit + self._rng.randint(1, 5) * self._unit
                at = ends.isoformat().replace("+00:00", "Z")  # whole seconds, as the API takes it
                key = str(uuid.uuid4())  # one over its attempts
                retried(
                    lambda: self._api.put_type_limit(
                        account.account_id, account.resource_type, limit=limit, expires_at=at, idempotency_key=key
                    )
                )
                self.made.append(f"{account.name}: {limit} until {at}")
            else:
                self._return_an_override()

    def _return_an_override(self) -> bool:
        """The first type (in a random order) whose limit is an override (the limit changer's PUTs
        make them) returned to its plan; False when none is."""
        for account in self._rng.sample(self._accounts, len(self._accounts)):
            view = retried(partial(self._api.get_type, account.account_id, account.resource_type))
            if view.limit_source != "override":
                continue
            try:
                retried(partial(self._api.remove_override, account.account_id, account.resource_type))
            except HybridCounterError as error:
                if error.status != 404:  # OverrideNotFound: a retry of a removal that landed
                    raise
            self.made.append(f"{account.name}: back to its plan")
            return True
        return False

    def _change(self, plan: str) -> None:
        """One type of the plan lowered (to 1..3 units) or raised (by 4..20), the others kept."""
        quotas = dict(self.plans[plan])
        kind = self._rng.choice(sorted(quotas))
        old = quotas[kind]
        lowered = self._rng.random() < 0.5
        quotas[kind] = (
            self._rng.randint(1, 3) if lowered else old // self._unit + self._rng.randint(4, 20)
        ) * self._unit
        body = {name: {"limit": limit} for name, limit in quotas.items()}
        retried(lambda: self._api.put_plan(plan, quotas=body))
        self.plans[plan] = quotas
        self.made.append(f"{plan}/{kind}: {old} -> {quotas[kind]}")


def retried(call: Callable[[], Any]) -> Any:
    """An admin's call, a 5xx or no answer retried (each such call lands once however often it is
    made: a plan's PUT by its quotas, a membership by its plan, a grant by its key, an account's
    deletion by its account); a 4xx is raised."""
    for attempt_number in range(RETRIES):
        try:
            return call()
        except HybridCounterError as error:
            if (error.status is not None and error.status < 500) or attempt_number == RETRIES - 1:
                raise
        time.sleep(0.05)
    raise AssertionError("unreachable")


class AccountDeleter(threading.Thread):
    """An admin who deletes an account (`DELETE /accounts/{id}`) half-way through the clients'
    operations, while they still create in it, on its own thread so that no other admin's slower
    steps hold it back (docs/chaos.md, "Deleting an account"). `forget(account_id)` is called just
    before; `deleted_after` is then when the DELETE was answered (time.monotonic()). Once answered,
    it sends one create of its own to each of the account's quotas, as a client arriving late would:
    each must be refused, whether or not a client created in the account after the DELETE.
    `doomed`: the account's quotas (one per type), which the deletion's checks read too."""

    def __init__(
        self,
        api: LimitsClient,
        doomed: list[Account],
        outcomes: ClientOutcomes,
        operations: int,
        forget: Callable[[str], None],
        gate: Gate | None = None,
    ) -> None:
        super().__init__(name="chaos-account-deleter", daemon=True)
        self._api, self.doomed, self._outcomes, self._forget = api, doomed, outcomes, forget
        self._gate = gate or Gate()
        self._mark = operations // 2
        self.account_id = doomed[0].account_id
        self.deletion: AccountDeletion | None = None
        self.deleted_after: float | None = None
        self.stop = threading.Event()
        self.made: list[str] = []
        self.failed: list[str] = []

    def run(self) -> None:
        if self._outcomes.reached(self._mark, self.stop):
            with self._gate.passage():
                self._take_the_deletion()

    def finish(self) -> None:
        """Once the clients stopped: the deletion, if a client that met faults kept them short of
        its mark (they answer fewer times)."""
        self.stop.set()
        self.join()
        if self.deletion is None and not self.failed:
            self._take_the_deletion()

    def _take_the_deletion(self) -> None:
        """Every create of the account is 404 from its fence on (docs/plans.md, "Lifecycle"); a
        repeat after a lost answer answers the same deletion."""
        self._forget(self.account_id)
        with self._outcomes.lock:
            self._outcomes.deleted_accounts.add(self.account_id)
        try:
            self.deletion = retried(partial(self._api.delete_account, self.account_id))
        except Exception as error:  # an answer no careful admin expects: the deletion's checks report it
            self.failed.append(f"{type(error).__name__}: {error}")
            return
        self.deleted_after = time.monotonic()
        self.made.append(f"{self.account_id}: deleted, requested at {self.deletion.requested_at}")
        for account in self.doomed:
            create(self._api, account, f"late-{uuid.uuid4()}", self._outcomes)
