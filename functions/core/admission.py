"""Sharded admission: an account's limit as room spread over up to 64 shard items (escrow).

One item can take 1,000 writes a second, and every create and delete writes the item that admits
it twice: so one account item caps an account at 250 create+delete iterations a second, however
large the table. An account therefore admits on *shards*: shard 0 is the account item, shard i >= 1
an item on a partition key of its own. Each shard holds

* `room`: slots it may still admit, and `admitted`: slots it admitted that are not released yet;
* `best_effort`, and the leases of the requests it admitted or is deleting (functions/core/leases.py).

The sum of `room + admitted` over an account's shards is its limit, and no shard but shard 0 ever
has a negative room. So the sum of `admitted`, the slots held, never exceeds the limit as long as
shard 0's room is not negative: exactly the single-item invariant, without a single item.

* **Admit**: `room - 1, admitted + 1` on one shard, if `room >= 1`: one conditional write, no
  transaction. A process picks a shard at random among the account's active ones but
  shard 0, which keeps its capacity for granting room (and admits when the others have none).
* **A shard that ran dry** takes half the room of its *donor* (a two-item transaction: the donor
  gives, the shard takes, the sum unchanged). Shard i's donor is i without its highest bit (3 -> 1,
  6 -> 2, 4 -> 0): when an account doubles from n to 2n shards each old shard gives half its room to
  one new one, so shard 0 grants 6 times on the way to 64 shards, not 63, and the room ends evenly
  spread. A donor without room sends the shard to shard 0 for a share of its room, or the create
  admits on a shard that still has room.
* **Refuse** only when shard 0 has no room and a consistent snapshot of every shard
  (TransactGetItems) shows no room anywhere: a 409 means the account was full at one instant. If
  that read showed leases of requests that died (older than any request runs), their slots may be
  free: they are settled as the sweeper would (functions/core/leases.py) and the create looks once
  more, so a tenant at its limit gets a dead create's slot back when it needs it, not at the sweep.
* **Release** on the shard that admitted the resource (the resource item names it): `room + 1`.
* **Grow**: when a process sees a shard take more than `grow_at` writes a second, or a write on it
  throttled, it doubles the account's active shards (up to 64). A quiet account keeps one shard,
  which is the account item: it pays what it paid before sharding. A heal on a quiet account folds
  its shards back into one.
* **Lower the limit**: shard 0 takes the difference from its own room; if that is not enough, the
  other shards are *retired* (they admit nothing) and their room is moved to shard 0, so the account
  is one shard again and shard 0's negative room is the usage above the new limit. A retired shard
  still releases what it admitted; the room that frees is moved back to shard 0 when shard 0 needs it.

docs/admission.md has the argument; docs/scaling.md the figures.
"""

from __future__ import annotations

import logging
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Protocol, TypeVar

from functions.core.errors import AccountNotFound, GrantEnded, LimitExceeded, StoreUnavailable
from functions.core.leases import (
    DEFAULT_TOMBSTONE_RETENTION,
    DeadLeaseStore,
    Lease,
    iso_timestamp,
    parse_timestamp,
    settle_dead_leases,
    taken_before,
)
from functions.core.model import Quota, QuotaMode
from functions.core.periods import Period

logger = logging.getLogger(__name__)

K = TypeVar("K")
V = TypeVar("V")

MAX_SHARDS = 64  # a heal's fold of every shard fits one transaction (100 items), with room to spare


@dataclass(frozen=True)
class ShardState:
    """One shard item as read (shard 0 also carries the account's limit and shard layout)."""

    shard: int
    room: int
    admitted: int = 0
    best_effort: int = 0
    retired: bool = False
    version: int = 0
    limit: int = 0  # shard 0 only
    active: int = 1  # shard 0 only: creates pick among shards 0 .. active-1
    span: int = 1  # shard 0 only: every shard ever used is below it
    limit_version: int = 0  # shard 0 only: bumped by each limit change (the account's ETag)
    limit_set_at: int = 0  # shard 0 only: when the PUT that set the limit was received, epoch ms
    limit_request: str = ""  # shard 0 only: the token of that PUT
    thresholds: tuple[int, ...] | None = None  # shard 0 only: the quota's own usage thresholds, if any
    leases: tuple[Lease, ...] = ()  # held on it, oldest first
    # Shard 0 of a periodic quota (not of one of its periods): its period (None: a holding quota).
    period: Period | None = None
    limit_source: str = "account"  # shard 0 only: where its limit comes from (model.LimitSource)
    # Shard 0 only: when its override ends (epoch ms), for an expiring grant (docs/plans.md); no
    # create admits at or after it, and while it stands the account admits on shard 0 alone.
    grant_ends: int | None = None
    mode: str = QuotaMode.ENFORCE  # shard 0 only: a shadow quota admits past its limit (reserve_shadow)


@dataclass(frozen=True)
class Reserved:
    """A reservation that landed: the shard's heal epoch and version after it, when shard 0
    answered the account's shard layout (active, span), and the leases the shard held after it."""

    heal_epoch: int
    version: int
    layout: tuple[int, int] | None = None
    leases: tuple[Lease, ...] = ()
    # A shadow quota's reservation past its limit: the refusal enforcement would have made, which
    # the API announces as a shadow refusal (docs/plans.md, "Shadow mode"); None for any other.
    shadowed: LimitExceeded | None = None


class AccountFull(LimitExceeded):
    """No room on any shard, at one instant; `leases`: those the shards held then; `shadow`: shard 0
    (as read then) said the quota is in shadow mode, so the create is admitted past the limit."""

    def __init__(self, quota: Quota, limit: int, shards: Sequence[ShardState], units: int = 1) -> None:
        super().__init__(quota, limit, units)
        self.leases = tuple(lease for shard in shards for lease in shard.leases)
        self.shadow = bool(shards) and shards[0].shard == 0 and shards[0].mode == QuotaMode.SHADOW


class AdmissionStore(DeadLeaseStore, Protocol):
    def reserve_on(self, quota: Quota, lease: Lease) -> Reserved | None:
        """`room - 1, admitted + 1` and take `lease` on the shard `lease.shard`, if it has room and
        is not retired; None otherwise (no room, retired, or no such shard item yet). Raises
        AccountNotFound when shard 0 is missing."""
        ...

    def reserve_shadow(self, quota: Quota, lease: Lease) -> Reserved | None:
        """`admitted + units` and take `lease` on the shard `lease.shard`, with `room - units` on
        shard 0 whatever its room (in one transaction when they are two items), if the quota is
        still in shadow mode: shard 0's room may go negative, no other's does, and `room +
        admitted` over the shards stays the limit. None if it is not in shadow mode (a change to
        enforce landed first), or the shard is retired. Raises as `reserve_on`."""
        ...

    def read_shards(self, quota: Quota, shards: Sequence[int], snapshot: bool = False) -> list[ShardState]:
        """The shards that exist among `shards`, strongly consistent; `snapshot`: all read at one
        instant (TransactGetItems)."""
        ...

    def grant(self, quota: Quota, shard: int, slots: int, donor: int = 0) -> bool:
        """Move `slots` of room from `donor` to `shard` (creating it, un-retiring it) in one
        transaction, if the donor has that much room (and, but for shard 0, is not retired) and the
        shard has none (so two creates on one dry shard do not both take a grant); False if not,
        or if the transaction lost a race."""
        ...

    def gather(self, quota: Quota, shard: ShardState, retire: bool) -> bool:
        """Move the room `shard` was read with back to shard 0 (and retire it), if it still has
        exactly that room; False otherwise."""
        ...

    def set_active(self, quota: Quota, active: int, span: int, to: int) -> bool:
        """Set the account's active shards to `to` (and its span to at least `to`) if they are
        still `active` and `span`."""
        ...


@dataclass(frozen=True)
class ShardingSettings:
    # Writes a second on one shard before its account doubles its shards: a quarter of what a
    # partition takes (1,000 WCU/s), so a doubling lands long before any shard throttles.
    grow_at: float = 250.0
    max_shards: int = MAX_SHARDS
    attempts: int = 8  # shards tried by one create before it answers 503 (only under heavy races)
    min_window: float = 1.0  # seconds between two sightings of a shard's version to measure its rate
    max_window: float = 60.0
    remembered_accounts: int = 10_000
    # A lease older than this was taken by a request that is over: the sweeper's quiet period
    # (HEAL_QUIET_SECONDS, six times the API function's timeout), which settles them otherwise.
    dead_lease_age: timedelta = timedelta(seconds=60)
    # A write that sees this many dead leases on its shard settles them on the spot (each makes
    # every write of the shard about 90 bytes larger, and a write is billed per KB), rather than
    # leaving them for the next sweep, up to five minutes away. Fewer are left to the sweeper.
    settle_dead_at: int = 4
    tombstone_retention: timedelta = DEFAULT_TOMBSTONE_RETENTION


@dataclass
class _Known:
    active: int
    span: int


class Directory:
    """What this process knows of each account's shards, and the write rate it has seen on them.

    Built once per execution environment and injected (functions/shared/wiring.py). Everything here
    is a hint, corrected as it is used: an older layout sends a create to a retired shard or one
    without room, which reads shard 0 (and learns the layout) to find room; a process whose shards
    run hot tries to grow them, and when another process grew them first, learns the layout from
    shard 0. It never goes back to shard 0 on a timer: a hot account's shard 0 would take it all.
    """

    def __init__(
        self,
        settings: ShardingSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings or ShardingSettings()
        self._clock = clock
        self._rng = rng or random.Random()  # noqa: S311 - spreading load, not a secret
        self._known: OrderedDict[Quota, _Known] = OrderedDict()
        self._periods: OrderedDict[Quota, Period] = OrderedDict()
        self._seen: OrderedDict[tuple[Quota, int], tuple[int, float]] = OrderedDict()
        self._settling: OrderedDict[tuple[Quota, int], float] = OrderedDict()

    def _remember(self, memory: OrderedDict[K, V], key: K, value: V) -> None:
        """Keep `value` as the newest entry, forgetting the oldest beyond `remembered_accounts`."""
        memory[key] = value
        memory.move_to_end(key)
        while len(memory) > self.settings.remembered_accounts:
            memory.popitem(last=False)

    def pick(self, quota: Quota) -> int:
        """A shard to admit on: shard 0 until the account's layout is known, and on a grown account
        any shard but 0, which grants room to the others and so needs its capacity for that."""
        known = self._known.get(quota)
        if known is None or known.active == 1:
            return 0
        return self._rng.randrange(1, known.active)

    def layout(self, quota: Quota) -> tuple[int, int] | None:
        known = self._known.get(quota)
        return None if known is None else (known.active, known.span)

    def learn(self, quota: Quota, active: int, span: int) -> None:
        self._remember(self._known, quota, _Known(active, span))

    def period_of(self, quota: Quota) -> Period | None:
        """The quota's period, once this process has met it; None: a holding quota, or one not met
        yet (its shard 0 refuses a holding's write, which teaches the period: QuotaIsPeriodic). A
        quota's period never changes once it holds anything (functions/core/accounts.py)."""
        return self._periods.get(quota)

    def learn_period(self, quota: Quota, period: Period) -> None:
        self._remember(self._periods, quota, period)

    def may_settle(self, quota: Quota, shard: int) -> bool:
        """Whether this process may settle the shard's dead leases now: once per `min_window`, so
        a shard whose settling write failed (throttled) is not written again by every request."""
        now = self._clock()
        key = (quota, shard)
        last = self._settling.get(key)
        if last is not None and now - last < self.settings.min_window:
            return False
        self._remember(self._settling, key, now)
        return True

    def observe(self, quota: Quota, shard: int, version: int) -> float | None:
        """The shard's writes per second since this process last saw its version, once at least
        `min_window` has passed; None before that, or when the last sighting is too old."""
        now = self._clock()
        key = (quota, shard)
        seen = self._seen.get(key)
        if seen is not None and now - seen[1] < self.settings.min_window:
            return None
        self._remember(self._seen, key, (version, now))
        if seen is None or now - seen[1] > self.settings.max_window:
            return None
        return (version - seen[0]) / (now - seen[1])


def reserve(store: AdmissionStore, directory: Directory, quota: Quota, lease: Lease) -> tuple[Lease, Reserved]:
    """Admit one slot. Returns the lease as placed (on the shard that admitted) and what the
    reservation saw of that shard; raises LimitExceeded when the account was full, AccountNotFound."""
    shard = directory.pick(quota)
    throttled: StoreUnavailable | None = None
    looked_again = False
    landed_maybe = False  # a take on `shard` may have landed: stay there
    for _ in range(directory.settings.attempts):
        placed = replace(lease, shard=shard)
        try:
            reserved = store.reserve_on(quota, placed)
            if reserved is None:  # refused, and the shard does not hold this lease: it never landed
                landed_maybe = False
                shard = find_room(store, directory, quota, shard, lease.units)
                continue
        except AccountFull as full:
            # Full, perhaps of slots held by requests that died (which the sweeper frees within six
            # minutes): settle those and look again, once, where the oldest was.
            freed = None if looked_again else settle_dead_seen(store, directory, quota, full.leases, lease.taken_at)
            if freed is not None:
                shard, looked_again = freed.shard, True
                continue
            if not full.shadow:
                raise
            # A shadow quota: the refusal enforcement would make now is announced, and the create
            # admitted on shard 0 past the limit (unless the quota went back to enforce meanwhile).
            shadowed = _reserve_past_limit(store, quota, lease, full)
            if shadowed is None:
                shard = 0
                continue
            if shadowed[1].layout is not None:
                directory.learn(quota, *shadowed[1].layout)
            return shadowed
        except StoreUnavailable as failure:
            if not failure.throttled:
                raise
            throttled = failure
            if failure.may_have_landed or landed_maybe:
                # An earlier attempt may have taken the lease here, holding a slot: only another
                # take on this shard tells (it finds its own lease), and a take on another shard
                # would hold a second slot for the same resource. Grow (once) for the next creates.
                if not landed_maybe:
                    _grow(store, directory, quota, shard, "throttled")
                landed_maybe = True
                continue
            # The shard (or, finding room, the one it asked) is hotter than a partition takes. A
            # process that did not know the layout reads it first: the account may have grown
            # already. Otherwise grow now, without waiting to measure a rate from writes that no
            # longer land; then try a shard of the new layout (never shard 0 on a grown account).
            known = directory.layout(quota)
            if known is None:
                known = learn_layout(store, directory, quota)
                if known is not None and known[0] > 1:
                    shard = directory.pick(quota)
                    continue
            _grow(store, directory, quota, shard, "throttled")
            shard = directory.pick(quota)
            continue
        if reserved.layout is not None:
            directory.learn(quota, *reserved.layout)
        _grow_if_hot(store, directory, quota, shard, reserved.version)
        return placed, reserved
    if throttled is not None:
        raise throttled
    raise StoreUnavailable(f"admission on {quota}: the room found was taken first", may_have_landed=False)


def _reserve_past_limit(
    store: AdmissionStore, quota: Quota, lease: Lease, full: AccountFull
) -> tuple[Lease, Reserved] | None:
    """A shadow quota's create past its limit: its units taken on shard 0 whatever its room, so shard
    0's room goes negative by what is admitted past the limit, exactly as a lowered limit leaves it
    (`room + admitted` over the shards stays the limit). None when the quota is in enforce mode by
    the time of the write: the create then looks for room as any other, and is refused."""
    placed = replace(lease, shard=0)
    reserved = store.reserve_shadow(quota, placed)
    if reserved is None:
        return None
    logger.info("%s: shadow quota admitted %d units past its limit %d", quota, lease.units, full.limit)
    return placed, replace(reserved, shadowed=full)


def find_room(store: AdmissionStore, directory: Directory, quota: Quota, dry: int, units: int = 1) -> int:
    """A shard to try next after shard `dry` had less room than `units` (the create's amount);
    raises LimitExceeded when the account's shards hold fewer free units than that in total."""
    donor = donor_of(dry)
    if donor > 0 and _take_half(store, quota, dry, units):
        return dry
    account = _account(store, quota)
    directory.learn(quota, account.active, account.span)
    if account.room >= units:
        # Shard 0 is the donor of 1, 2, 4, ...: half its room, as every donor gives; to any other
        # shard whose donor had none, a share as if every active shard took one, and at least one
        # slot while shard 0 keeps one (a small limit over many shards still spreads). A create of
        # more units takes at least its amount, while shard 0 has it.
        slots = account.room // 2 if donor == 0 else max(account.room // account.active, min(account.room - 1, 1))
        if units > 1:
            slots = min(max(slots, units), account.room)
        if 0 < dry < account.active and slots >= units and store.grant(quota, dry, slots):
            return dry
        return 0
    if account.span == 1:
        raise AccountFull(quota, account.limit, [account], units)  # one item, read at one instant: full
    found = _where_room_is(store, quota, account, store.read_shards(quota, range(1, account.span)), units)
    if found is not None:
        return found
    # Those reads were not one instant: room moving between two shards can fall between them. A
    # snapshot is, so only it can prove the account full: fewer free units than `units` in total.
    snapshot = store.read_shards(quota, range(account.span), snapshot=True)
    if not snapshot or snapshot[0].shard != 0:
        raise AccountNotFound(quota)
    first = snapshot[0]
    if first.room >= units or (first.active, first.span) != (account.active, account.span):
        return 0  # something moved since we looked: look again
    found = _where_room_is(store, quota, first, snapshot[1:], units, at_one_instant=True)
    if found is not None:
        return found
    raise AccountFull(quota, account.limit, snapshot, units)


def bring_room_to(store: AdmissionStore, quota: Quota, shard: int, units: int, at_ms: int | None = None) -> None:
    """Move room to `shard` so that it holds `units`: a resize grows its resource on the shard that
    admitted it, where its delete will free it. Raises AccountFull when the account's shards hold
    fewer free units than `units` at one instant (a snapshot, as a create is refused). Shard 0 grants
    them when it has them; otherwise every shard's room goes home to shard 0 first (the shards stay
    open), as a limit lowering gathers it. A race lost here shows in the next reservation. `at_ms`:
    the growth's time (epoch ms): GrantEnded, nothing moved, when the quota's expiring override
    ended by then (a resource admitted on another shard before the grant grows by the limit that
    follows it, as shard 0's reservation does)."""
    account = _account(store, quota)
    if at_ms is not None and account.grant_ends is not None and account.grant_ends <= at_ms:
        raise GrantEnded(quota, account.grant_ends)
    shards = store.read_shards(quota, range(account.span), snapshot=True) if account.span > 1 else [account]
    if not shards or shards[0].shard != 0:
        raise AccountNotFound(quota)
    if sum(s.room for s in shards) < units:
        raise AccountFull(quota, account.limit, shards, units)
    target = next((s for s in shards if s.shard == shard), ShardState(shard, room=0))
    if target.room >= units and not target.retired:
        return  # room came meanwhile
    if shard == 0 or shards[0].room < units or target.room > 0:
        for other in shards[1:]:
            if other.room > 0:
                store.gather(quota, other, retire=False)
    if shard != 0:
        store.grant(quota, shard, units)


def settle_dead_seen(
    store: AdmissionStore, directory: Directory, quota: Quota, seen: Sequence[Lease], now: str, at_least: int = 1
) -> Lease | None:
    """Settle the dead leases among `seen` (what a read or write of the account just returned,
    older than any request runs), if there are `at_least`, as the sweeper would
    (functions/core/leases.py). Returns the oldest of them once settled; None when there were too
    few, this process tried on that shard within `min_window` (so a throttled shard is not written
    again by every request), or settling failed: the sweeper settles them then."""
    settings = directory.settings
    moment = parse_timestamp(now)
    dead = taken_before(seen, iso_timestamp(moment - settings.dead_lease_age))
    if not dead or len(dead) < at_least or not directory.may_settle(quota, dead[0].shard):
        return None
    try:
        settled = settle_dead_leases(store, quota, dead, iso_timestamp(moment - settings.tombstone_retention))
    except StoreUnavailable:
        logger.warning("could not settle %d dead leases on %s; the sweeper will", len(dead), quota)
        return None
    logger.info("%s: settled %d of %d dead leases seen", quota, settled, len(dead))
    return dead[0]


def donor_of(shard: int) -> int:
    """The shard that gives `shard` room when it runs dry: `shard` without its highest bit."""
    return shard - (1 << (shard.bit_length() - 1)) if shard > 0 else 0


def ancestors(shard: int) -> list[int]:
    """`shard`'s donor, its donor's donor, and so on, nearest first, shard 0 left out."""
    found = []
    while (shard := donor_of(shard)) > 0:
        found.append(shard)
    return found


def _take_half(store: AdmissionStore, quota: Quota, dry: int, units: int = 1) -> bool:
    """Half the room of `dry`'s nearest open ancestor whose half holds `units` (one read of them
    all, then one grant), so a shard whose donor has not opened yet still leaves shard 0 alone."""
    found = {shard.shard: shard for shard in store.read_shards(quota, ancestors(dry))}
    for candidate in ancestors(dry):
        donor = found.get(candidate)
        if donor is not None and not donor.retired and donor.room // 2 >= units:
            return store.grant(quota, dry, donor.room // 2, donor=candidate)
    return False


def _where_room_is(
    store: AdmissionStore,
    quota: Quota,
    account: ShardState,
    others: list[ShardState],
    units: int = 1,
    at_one_instant: bool = False,
) -> int | None:
    """The active shard with the most room, if it holds `units`; else shard 0, once the room of
    retired shards (or of shards beyond the active ones, which no create picks) is brought home,
    and, when the shards hold `units` in total but no one of them does, every shard's room (as a
    limit lowering gathers it); None if there is no room to bring. `at_one_instant`: `account` and
    `others` are a snapshot, so a total that holds `units` looks again at shard 0 even if a gather
    lost a race (something moved), rather than refuse."""
    open_shards = [s for s in others if s.room >= units and not s.retired and s.shard < account.active]
    if open_shards:
        return max(open_shards, key=lambda s: s.room).shard
    enough = account.room + sum(s.room for s in others if s.room > 0) >= units
    home = [s for s in others if s.room >= 1 and (enough or s.retired or s.shard >= account.active)]
    gathered = [store.gather(quota, s, retire=True) for s in home]  # every one
    return 0 if any(gathered) or (at_one_instant and enough) else None


def _account(store: AdmissionStore, quota: Quota) -> ShardState:
    found = store.read_shards(quota, [0])
    if not found:
        raise AccountNotFound(quota)
    return found[0]


def _grow_if_hot(store: AdmissionStore, directory: Directory, quota: Quota, shard: int, version: int) -> None:
    rate = directory.observe(quota, shard, version)
    if rate is not None and rate >= directory.settings.grow_at and directory.layout(quota) is not None:
        _grow(store, directory, quota, shard, f"{rate:.0f} writes/s")


def learn_layout(store: AdmissionStore, directory: Directory, quota: Quota) -> tuple[int, int] | None:
    """The account's layout read from shard 0 (a read: shard 0 of a hot account is short of writes,
    not of reads), or what this process knew when the read fails."""
    try:
        first = _account(store, quota)
    except StoreUnavailable:
        return directory.layout(quota)
    directory.learn(quota, first.active, first.span)
    return first.active, first.span


def _grow(store: AdmissionStore, directory: Directory, quota: Quota, shard: int, why: str) -> None:
    """Double the account's active shards (up to max_shards). Growing is an optimisation: a
    failure here fails nothing."""
    try:
        layout = directory.layout(quota) or learn_layout(store, directory, quota)
        if layout is None:
            return
        active, span = layout
        if active >= directory.settings.max_shards:
            return
        to = min(active * 2, directory.settings.max_shards)
        grown = store.set_active(quota, active, span, to)
    except StoreUnavailable:
        return
    if grown:
        logger.info("account %s: shard %d %s; %d -> %d shards", quota, shard, why, active, to)
        directory.learn(quota, to, max(span, to))
    else:
        # Someone else changed the layout first: read it, rather than fall back to shard 0, whose
        # writes every process of a hot account would then share.
        learn_layout(store, directory, quota)
