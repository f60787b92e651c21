"""The API's flows: admission, create, delete, reads. Pure orchestration over the `ApiStore` port.

Three numbers move in a fixed order around each resource's life, on the admission shard that
admitted it (functions/core/admission.py; an account has one shard, its account item, until it is
busy):

* `best_effort` (lower bound): +1 only after the resource exists, -1 before it stops being live.
* `admitted` (upper bound): +1 before the resource exists, taking one of the shard's `room`, only
  if the shard has room; -1 (room +1) only after it stopped being live. That single conditional
  update is the admission check, so concurrent creates cannot run past the limit, and no
  transaction runs on a create's or a delete's writes.
* `limit`, on the account item: the sum of every shard's `room + admitted`.

Each request's first shard write takes a lease named by its token and its second settles it
(functions/core/leases.py), so every write can be retried after an ambiguous failure and is
applied exactly once. The resource item carries the same token (`request_token`, `delete_token`),
also in the tombstone a counted delete leaves, so a retried put or soft delete recognises its own
landing whatever the consumer did since. A write whose outcome stays unknown leaves its lease,
which a heal resolves from the resource item once the request is certainly over.

Every shard write also bumps the shard's `version` and stamps its time (`last_write_exact`, and
rounded up to the minute `last_write_at` for the activity index), so a heal can tell that no API
write came between its reads and its write. A create's count is conditional on the shard's
`heal_epoch` being the one its reservation saw: a heal in between has already counted (or will
never count) the resource. docs/admission.md has the argument and every write.
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from functions.core import leases
from functions.core.admission import (
    AccountFull,
    AdmissionStore,
    Directory,
    Reserved,
    ShardState,
    bring_room_to,
    learn_layout,
    reserve,
    settle_dead_seen,
)
from functions.core.errors import (
    AccountNotFound,
    AmountDiffers,
    CallerGaveUp,
    GrantRefused,
    IdempotencyKeyMismatch,
    IdempotencyKeyReused,
    LimitExceeded,
    PeriodChangeRefused,
    PeriodClosed,
    PreconditionFailed,
    QuotaIsPeriodic,
    ResourceAlreadyExists,
    ResourceChanged,
    ResourceNotFound,
    ShadowRefused,
    StoreUnavailable,
    TooManyResourceTypes,
)
from functions.core.leases import (
    COMMIT_RESERVATION,
    DROP,
    FINISH_DELETION,
    RELEASE_RESERVATION,
    UNDO_DELETION,
    Lease,
    LeaseKind,
    Settled,
    Settlement,
    epoch_ms,
    in_units,
    parse_timestamp,
)
from functions.core.model import (
    MAX_RESOURCE_TYPES,
    AccountUsage,
    LimitSource,
    NewResource,
    Page,
    PageBudget,
    Quota,
    QuotaMode,
    Resource,
    TenantRate,
    Usage,
    idempotent_put_id,
    idempotent_resource_id,
    random_resource_id,
)
from functions.core.periods import Period, PeriodWindow
from functions.core.thresholds import thresholds_or_default

logger = logging.getLogger(__name__)


class Registered(enum.Enum):
    """What adding a type to its account's registry found."""

    ADDED = "added"  # now registered (or it was)
    FULL = "full"  # the account has the most types it may have, and not this one
    NO_ACCOUNT = "no_account"  # the account item does not exist: nothing written


class ApiStore(AdmissionStore, Protocol):
    """What the API flows need from storage. Every method is one DynamoDB call, retried by the SDK:
    each write's condition makes its retry harmless (docs/admission.md)."""

    def create_account(self, quota: Quota, change: LimitChange, now: str, resource_types: Sequence[str] = ()) -> bool:
        """Create the quota's account item with all its room on it, at limit version 1 (carrying
        the change's rate and thresholds if any, and `resource_types`, the default type's
        registry); False if it exists."""
        ...

    def add_type(self, quota: Quota, most: int) -> Registered:
        """Add the quota's type to its account's registry (on the default type's account item),
        if the account has fewer than `most` types besides the default or has this one already."""
        ...

    def read_account(self, account_id: str) -> AccountUsage | None:
        """The account's default type's usage read as `read_usage` reads it, and when its account
        item lists other types, each of theirs (those whose limit item exists) in one more read."""
        ...

    def set_limit(
        self,
        quota: Quota,
        account: ShardState,
        change: LimitChange,
        now: str,
        retired_span: int,
        periods: Sequence[PeriodLimit] = (),
    ) -> bool:
        """Apply `change` (the limit, shard 0's room by the difference, the rate and thresholds if
        any; the next limit version, the change's time and token) if the limit version is still the
        one read; with `retired_span`, only if every shard below it but 0 is retired and empty. A
        change that is `announced` writes its outbox item in the same transaction."""
        ...

    def read_usage(self, quota: Quota) -> Usage | None: ...

    def open_period(self, period: Quota, account: ShardState, now: str, expires_at: int, active: int = 1) -> bool:
        """Create shard 0 of `period` (a period of a periodic quota) with the limit, limit version
        and thresholds of its quota's account item as read (`account`) and `active` shards (the
        others take their room from it as a grown account's do), in one transaction conditional
        on the account item still being at that limit version; False if it was not (or the
        period's shard 0 exists). `expires_at`: when TTL may remove it (epoch seconds)."""
        ...

    def take_deletion(self, quota: Quota, lease: Lease, only_unsharded: bool = False) -> tuple[Lease, ...] | None:
        """Take a deletion lease with `best_effort - lease.units` on the shard `lease.shard`; returns the
        leases the shard holds after it. With `only_unsharded` (on shard 0), only if the account
        never had more than one shard; None if it had (nothing taken). Raises AccountNotFound when
        shard 0 is missing."""
        ...

    def settle(self, quota: Quota, lease: Lease, settlement: Settlement, now: str | None) -> Settled:
        """Remove the lease and apply the settlement's change, once. `now` stamps an API write."""
        ...

    def put_resource(self, resource: Resource) -> None:
        """Conditional create. Raises ResourceAlreadyExists(existing) for another request's item
        (or tombstone); an SDK retry that finds this request's own item succeeds."""
        ...

    def get_resource(self, quota: Quota, resource_id: str) -> Resource | None:
        """The resource, soft-deleted or a tombstone included (strongly consistent)."""
        ...

    def soft_delete(self, quota: Quota, resource_id: str, now: str, token: str, shard: int, units: int = 1) -> bool:
        """Set deleted=true with `token` if the resource is live, was admitted by `shard` and holds
        `units`; False if another request's delete landed, it does not exist, or another shard
        admitted it; AmountDiffers(resource) if it is live on `shard` with another amount. An SDK
        retry of a landed write still returns True."""
        ...

    def resize(self, resource: Resource, amount: int, token: str, key: str, now: str) -> Resource | None:
        """Set the live `resource` (as read) to `amount` units at its next version, with the resize's
        `token` and hashed Idempotency-Key `key` ("" for none), if it is still at the version read;
        returns it as resized, or None if it was resized, deleted or removed since. An SDK retry
        of a landed write returns the resource as that write left it."""
        ...

    def list_resources(self, quota: Quota, limit: int, cursor: str | None, budget: PageBudget | None = None) -> Page:
        """Up to `limit` live resources after `cursor`; with `budget`, only as many as fit in it,
        and a cursor that continues right after the last."""
        ...

    def claim_put(self, quota: Quota, put_id: str, first: FirstAttempt, now: int, expires_at: int) -> FirstAttempt:
        """Record `first` as the keyed PUT `put_id` of the quota, until `expires_at`, unless a
        record of it is there and not expired at `now` (epoch seconds): then return that one (an
        SDK retry that finds this request's own record returns it too)."""
        ...


@dataclass(frozen=True)
class Created:
    resource: Resource
    replayed: bool  # True when an Idempotency-Key retry returned the earlier resource
    # A shadow quota's create admitted past its limit: the refusal enforcement would have made
    # (the API logs it as a shadow refusal, docs/plans.md "Shadow mode"); None for any other.
    shadowed: LimitExceeded | None = None


Clock = Callable[[], str]
TokenSource = Callable[[], str]
# True while the caller may still be waiting for the answer. A late invocation (its caller already
# had API Gateway's 504) starts no write.
Deadline = Callable[[], bool]


def _always() -> bool:
    return True


# Attempts of a limit change against concurrent changes of the same account.
PUT_ACCOUNT_ATTEMPTS = 8


@dataclass(frozen=True)
class PutKey:
    """A PUT's `Idempotency-Key`: a client sends the same one on every attempt of one call, so
    that each retry is taken for the request its first attempt was."""

    value: str
    window_seconds: int  # how long the API remembers it (the tombstone retention, as a create's key)


@dataclass(frozen=True)
class FirstAttempt:
    """What a keyed PUT's first attempt recorded under its key: its body's fingerprint, when API
    Gateway received it and its token. Every later attempt is that request."""

    fingerprint: str
    received_ms: int
    token: str


@dataclass(frozen=True)
class LimitChange:
    """What one `PUT /accounts/{id}` (or `.../types/{type}`) asks for, and what tells it apart
    from other PUTs.

    Each change bumps the quota's `limit_version` (its ETag) and stamps when API Gateway received
    the PUT: a PUT received earlier never overwrites one received later, however late it lands (docs/
    admission.md, "Limit changes"), and `token` lets a PUT recognise its own landed write."""

    limit: int
    received_ms: int
    token: str
    rate: TenantRate | None = None  # None: the account keeps its rate limit
    if_match: frozenset[int] | None = None  # the versions the caller allows (If-Match); None: any
    must_exist: bool = False  # If-Match: *
    changed_by: str = ""  # the caller, as the limit changed event names it
    thresholds: tuple[int, ...] | None = None  # the quota's own, ascending; None: it keeps what it has
    key: PutKey | None = None  # Idempotency-Key: each attempt of one call is its first attempt
    period: Period | None = None  # makes the quota periodic; None: it keeps the period it has, or none
    # Where the limit comes from (model.LimitSource): None for a quota's own PUT, which is an
    # override on a quota its account's plan gives and the account's own on any other; a plan's
    # application gives `plan` (docs/plans.md).
    source: str | None = None
    keeps_override: bool = False  # a plan's application: an override stands, nothing written
    # An expiring grant (docs/plans.md): the override ends then (epoch ms) and its type returns to
    # the plan's limit (functions/core/grants.py). Only an override may carry one; None: it does
    # not expire (and any grant the quota had ends with this change).
    grant_ends: int | None = None
    # The quota's mode (model.QuotaMode, docs/plans.md "Shadow mode"); None: it keeps the one it
    # has (enforce for a quota the change creates).
    mode: str | None = None

    def fingerprint(self) -> str:
        """What the PUT's body asks for: a key sent again with another one is another request. A
        PUT without a period has the fingerprint it had before periods."""
        rate = None if self.rate is None else [self.rate.requests_per_second, self.rate.window_seconds]
        asked: dict[str, object] = {"limit": self.limit, "rate": rate, "thresholds": self.thresholds}
        if self.period is not None:
            asked["period"] = self.period.to_json()
        if self.grant_ends is not None:
            asked["expiresAt"] = self.grant_ends
        if self.mode is not None:
            asked["mode"] = self.mode
        return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()

    def announced(self, account: ShardState) -> bool:
        """Whether this change, applied to `account` as read, is one subscribers are told of (and
        the consumer decides again): its limit, its effective thresholds, or its mode differ."""
        return (
            self.limit != account.limit
            or self.new_thresholds(account) != thresholds_or_default(account.thresholds)
            or self.new_mode(account) != account.mode
        )

    def new_mode(self, account: ShardState | None) -> str:
        """The quota's mode after this change: the one it gives, else the one `account` has."""
        if self.mode is not None:
            return self.mode
        return QuotaMode.ENFORCE if account is None else account.mode

    def new_thresholds(self, account: ShardState) -> tuple[int, ...]:
        """The quota's effective thresholds after this change: the ones it gives, else the ones
        `account` has."""
        return thresholds_or_default(account.thresholds if self.thresholds is None else self.thresholds)

    def source_on(self, account: ShardState | None) -> str:
        """Where the limit this change sets on `account` (as read; None: not created yet) comes from."""
        if self.source is not None:
            return self.source
        following_a_plan = account is not None and account.limit_source != LimitSource.ACCOUNT
        return LimitSource.OVERRIDE if following_a_plan else LimitSource.ACCOUNT

    def changes_nothing(self, account: ShardState) -> bool:
        """A plan's application that would leave `account` (as read) exactly as it is: the same
        limit, thresholds, period and source, so it writes nothing (no new limit version)."""
        return (
            self.source == LimitSource.PLAN
            and account.limit_source == LimitSource.PLAN
            and self.limit == account.limit
            and (self.thresholds is None or self.thresholds == account.thresholds)
            and (self.period is None or self.period == account.period)
            and (self.mode is None or self.mode == account.mode)
        )

    def check(self, quota: Quota, account: ShardState | None) -> None:
        """Raise PreconditionFailed unless the account is as the caller's If-Match says."""
        if account is None:
            if self.must_exist or self.if_match is not None:
                raise PreconditionFailed(quota, None)
        elif self.if_match is not None and account.limit_version not in self.if_match:
            raise PreconditionFailed(quota, account.limit_version)


# The default type's limit when the account item is created by its first other type's PUT: 0, set
# by no PUT (received at 0, no token), so a PUT of the account received at any time applies.
IMPLICIT_ACCOUNT = LimitChange(limit=0, received_ms=0, token="")


@dataclass(frozen=True)
class PeriodLimit:
    """A period of a periodic quota that a limit change writes with its account item (the current
    period, and the next, which a process whose clock runs ahead may have opened): its shard 0 as
    read, and the span of its other shards retired first when the change lowers the limit below
    its room (0: none, as the account item's `retired_span`). `shard` None: it was not open, and
    the change lands only while it still is not (an open landing first copied the old limit)."""

    quota: Quota
    shard: ShardState | None
    retired_span: int = 0


def limit_change(
    limit: int, received_ms: int, rate: TenantRate | None = None, thresholds: tuple[int, ...] | None = None
) -> LimitChange:
    """A change received at `received_ms` (epoch ms), for callers other than the API (operators'
    tools, benchmarks)."""
    return LimitChange(limit=limit, rate=rate, received_ms=received_ms, token=leases.new_token(), thresholds=thresholds)


def put_account(store: ApiStore, quota: Quota, change: LimitChange, clock: Clock, in_time: Deadline = _always) -> Usage:
    """Create the account, or change its limit by moving the difference into shard 0's room (and
    its rate limit and thresholds, if the change has them).

    A limit lowered by more than shard 0's room first folds every other shard into shard 0
    (retiring them), so the usage above the new limit shows as shard 0's negative room and nothing
    admits until it is paid back (functions/core/admission.py). A PUT overtaken by one received
    after it changes nothing and answers the account as that later PUT left it. A keyed PUT is
    first recorded under its key, and a retry (the same key) takes its first attempt's time and
    token (`_as_first_attempt`): so a retry after a later PUT is overtaken by it, and a retry of
    a PUT that landed finds its own token."""
    if not in_time():
        raise CallerGaveUp()
    if quota.is_default and change.mode == QuotaMode.SHADOW:  # before a keyed PUT's record is written
        found = store.read_shards(quota, [0])
        _check_mode(quota, found[0] if found else None, change)
    now = clock()
    change = _as_first_attempt(store, quota, change, now)
    for _ in range(PUT_ACCOUNT_ATTEMPTS):
        found = store.read_shards(quota, [0])
        account = found[0] if found else None
        if account is not None and account.limit_request == change.token:
            return get_usage(store, quota, now)  # our own write landed (an SDK retry was refused)
        change.check(quota, account)
        _check_grant(quota, account, change)
        _check_mode(quota, account, change)
        if account is None:
            if store.create_account(quota, change, now):
                return get_usage(store, quota, now)
            continue
        if account.limit_set_at > change.received_ms:
            return get_usage(store, quota, now)  # overtaken by a PUT received later
        if (change.keeps_override and account.limit_source == LimitSource.OVERRIDE) or change.changes_nothing(account):
            return get_usage(store, quota, now)  # a plan's application: nothing of it to write here
        _check_period_change(quota, account, change)
        periods = _periods_to_change(store, quota, account, change, now)
        # A grant's account admits on shard 0 alone, which checks its end: its other shards retire.
        fits = account.room + change.limit - account.limit >= 0 and change.grant_ends is None
        if fits or account.span == 1:
            if store.set_limit(quota, account, change, now, retired_span=0, periods=periods):
                return get_usage(store, quota, now)
            continue
        _retire_other_shards(store, quota, account)
        if store.set_limit(quota, account, change, now, retired_span=account.span, periods=periods):
            return get_usage(store, quota, now)
    raise StoreUnavailable(f"put account {quota}: the account kept changing", may_have_landed=False)


def _check_grant(quota: Quota, account: ShardState | None, change: LimitChange) -> None:
    """Only an override of the account's plan can expire (a holding's: a periodic quota's periods
    admit without reading its end). GrantRefused, nothing written, for any other limit."""
    if change.grant_ends is None:
        return
    if account is None or change.source_on(account) != LimitSource.OVERRIDE:
        raise GrantRefused(quota, "only an override of the account's plan can expire; its plan does not give this type")
    if account.period is not None or change.period is not None:
        raise GrantRefused(quota, "a periodic quota's limit cannot expire")


def _check_mode(quota: Quota, account: ShardState | None, change: LimitChange) -> None:
    """Only a holding quota can be in shadow mode: a periodic one's periods admit on items of their
    own, which do not carry the mode. ShadowRefused, nothing written, for a change that would leave
    a periodic quota in shadow mode."""
    shadow = change.new_mode(account) == QuotaMode.SHADOW
    periodic = change.period is not None or (account is not None and account.period is not None)
    if shadow and periodic:
        raise ShadowRefused(quota, "a periodic quota cannot be in shadow mode")


def _check_period_change(quota: Quota, account: ShardState, change: LimitChange) -> None:
    """A holding quota becomes periodic only while it holds nothing (one shard, nothing admitted,
    no write in flight: the limit change's write is conditional on the version read, so nothing
    lands in between); a periodic quota keeps its period. Raises PeriodChangeRefused otherwise."""
    if change.period is None or change.period == account.period:
        return
    if account.period is not None:
        raise PeriodChangeRefused(quota, f"it is counted per {account.period.kind.value} already")
    if account.span > 1 or account.admitted or account.leases:
        raise PeriodChangeRefused(quota, "it holds resources; a holding quota becomes periodic only while empty")


def _periods_to_change(
    store: ApiStore, quota: Quota, account: ShardState, change: LimitChange, now: str
) -> list[PeriodLimit]:
    """The periods of a periodic quota the change writes with its account item: the current one
    and the next, each as read (an open one takes the new limit; one not open yet must still not
    be when the change lands, and opens later with the new limit). A lowering below an open
    period's room retires its other shards first, as the account's own."""
    if account.period is None:
        return []
    window = account.period.window_at(parse_timestamp(now))
    periods = []
    for opened in (window, account.period.following(window)):
        period = quota.in_period(opened.id)
        found = store.read_shards(period, [0])
        if not found:
            periods.append(PeriodLimit(period, None))
            continue
        shard = found[0]
        if shard.room + change.limit - shard.limit >= 0 or shard.span == 1:
            periods.append(PeriodLimit(period, shard))
            continue
        _retire_other_shards(store, period, shard)
        periods.append(PeriodLimit(period, shard, retired_span=shard.span))
    return periods


def _as_first_attempt(store: ApiStore, quota: Quota, change: LimitChange, now: str) -> LimitChange:
    """The change as its key's first attempt made it: received then, with its token. Without a
    key, the change as it is (each attempt a new request). IdempotencyKeyMismatch if the key was
    sent before with another body."""
    if change.key is None:
        return change
    ours = FirstAttempt(change.fingerprint(), change.received_ms, change.token)
    at = epoch_seconds(now)
    first = store.claim_put(quota, idempotent_put_id(change.key.value), ours, at, at + change.key.window_seconds)
    if first.fingerprint != ours.fingerprint:
        raise IdempotencyKeyMismatch()
    return replace(change, received_ms=first.received_ms, token=first.token)


def put_limit(store: ApiStore, quota: Quota, change: LimitChange, clock: Clock, in_time: Deadline = _always) -> Usage:
    """Set a quota's limit. The default type's is the account's (`put_account`). Another type is
    first added to its account's registry (the account item, created at limit 0 if missing), then
    its limit is set on its own items exactly as the default type's is: its own version and ETag,
    If-Match on its own, an older PUT never overwriting a newer one. A type is registered before
    its limit lands, so the registry never misses a type that has a limit (a name whose limit never
    landed is left out of reads, and the PUT's retry sets it)."""
    if quota.is_default:
        if change.grant_ends is not None:
            raise GrantRefused(quota, "the account's default type is never a plan's, so its limit cannot expire")
        return put_account(store, quota, change, clock, in_time)
    if not in_time():
        raise CallerGaveUp()
    found = store.read_shards(quota, [0])
    if change.grant_ends is not None:
        _check_grant(quota, found[0] if found else None, change)  # before a keyed PUT's record is written
    _check_mode(quota, found[0] if found else None, change)  # before the type is registered
    if not found:
        change.check(quota, None)  # If-Match on a type without a limit: refused before any write
        _register(store, quota, clock())
    return put_account(store, quota, change, clock, in_time)


def _register(store: ApiStore, quota: Quota, now: str) -> None:
    for _ in range(PUT_ACCOUNT_ATTEMPTS):
        registered = store.add_type(quota, MAX_RESOURCE_TYPES)
        if registered is Registered.ADDED:
            return
        if registered is Registered.FULL:
            raise TooManyResourceTypes(quota, MAX_RESOURCE_TYPES)
        if store.create_account(quota.default_quota, IMPLICIT_ACCOUNT, now, resource_types=[quota.resource_type]):
            return
    raise StoreUnavailable(f"register {quota}: the account kept changing", may_have_landed=False)


def get_account(store: ApiStore, account_id: str, now: str | None = None) -> AccountUsage:
    """The account's default type and every other type it has (a periodic one's counts of its
    period at `now`)."""
    read = store.read_account(account_id)
    if read is None:
        raise AccountNotFound(Quota(account_id))
    if not any(usage.period for usage in read.every_type):
        return read
    return AccountUsage(
        default=in_period_at(store, read.default, now),
        types=tuple(in_period_at(store, usage, now) for usage in read.types),
    )


def _retire_other_shards(store: ApiStore, quota: Quota, account: ShardState) -> None:
    store.set_active(quota, account.active, account.span, 1)  # no create picks them meanwhile
    for shard in store.read_shards(quota, range(1, account.span)):
        if not shard.retired or shard.room:
            store.gather(quota, shard, retire=True)  # a lost race shows in set_limit


def get_usage(store: ApiStore, quota: Quota, now: str | None = None) -> Usage:
    """The quota's limit and counts: a periodic quota's are those of its period at `now` (its
    current one; required for a periodic quota)."""
    usage = store.read_usage(quota)
    if usage is None:
        raise AccountNotFound(quota)
    return in_period_at(store, usage, now)


def in_period_at(store: ApiStore, usage: Usage, now: str | None) -> Usage:
    """A quota's usage as read from its account item, with a periodic quota's counts those of its
    period at `now`: zero until that period's first create opens it, with no write at its start."""
    if usage.period is None:
        return usage
    if now is None:
        raise ValueError(f"{usage.quota} is periodic: its usage is a period's, at a given time")
    window = usage.period.window_at(parse_timestamp(now))
    counted = store.read_usage(usage.quota.in_period(window.id))
    best_effort, eventual = (0, 0) if counted is None else (counted.best_effort_net, counted.eventual)
    return replace(usage, best_effort_net=best_effort, eventual=eventual, window=window)


def create_resource(
    store: ApiStore,
    quota: Quota,
    request: NewResource,
    idempotency_key: str | None,
    clock: Clock,
    token: TokenSource = leases.new_token,
    in_time: Deadline = _always,
    directory: Directory | None = None,
) -> Created:
    fingerprint = request.fingerprint()
    now = clock()
    if idempotency_key is None:
        resource_id = random_resource_id()
    else:
        resource_id = idempotent_resource_id(quota, idempotency_key)
        earlier = store.get_resource(quota, resource_id)
        if earlier is not None and not earlier.expired(epoch_seconds(now)):
            # A replay answers as the first call did, even if the account is now at its limit;
            # not once its quota is gone (a deleted account's or type's, docs/plans.md "Lifecycle").
            if not store.read_shards(quota, [0]):
                raise AccountNotFound(quota)
            return _replay(earlier, fingerprint)

    if not in_time():
        raise CallerGaveUp()
    directory = directory or Directory()
    asked = Lease(LeaseKind.RESERVATION, token(), resource_id, now, units=request.amount)
    admitting, lease, reserved = _reserve_for(store, directory, quota, asked)
    release = in_units(RELEASE_RESERVATION, lease.units)  # if the resource is not created

    resource = Resource(
        quota=admitting,
        resource_id=resource_id,
        name=request.name,
        attributes=request.attributes,
        created_at=now,
        request_fingerprint=fingerprint,
        request_token=lease.token,
        shard=lease.shard,
        amount=request.amount,
        expires_at=_record_end(directory, admitting, now),
    )
    if not in_time():
        _settle_quietly(store, admitting, lease, release, now)
        raise CallerGaveUp()
    try:
        store.put_resource(resource)
    except StoreUnavailable as failure:
        if not failure.may_have_landed:
            _settle_quietly(store, admitting, lease, release, now)  # certainly not created
            raise
        if not _landed(store, resource):
            raise  # unknown: the lease holds the slot until a heal finds out (docs/healing.md)
    except ResourceAlreadyExists as exists:
        # Another request's item holds the key (the same Idempotency-Key): ours never landed.
        _settle_quietly(store, admitting, lease, release, now)
        if not isinstance(exists.existing, Resource):
            raise
        return _replay(exists.existing, fingerprint)

    commit = replace(in_units(COMMIT_RESERVATION, lease.units), expected_heal_epoch=reserved.heal_epoch)
    try:
        if store.settle(admitting, lease, commit, now) is Settled.EPOCH_MOVED:
            # A heal since the reservation has counted the resource already, or will never need
            # to: skip the increment, forget the lease.
            store.settle(admitting, lease, DROP, now)
    except StoreUnavailable:
        # The resource exists and the stream will count it; the lease is resolved by a heal.
        logger.warning("best-effort count failed; resource %s stays undercounted", resource_id)
    _settle_dead_on_sight(store, directory, admitting, reserved.leases, now, in_time)
    return Created(resource=resource, replayed=False, shadowed=reserved.shadowed)


# Attempts of a create to find where it admits: a periodic quota learnt on the way, its period opened.
ADMITTING_ATTEMPTS = 4


def _reserve_for(store: ApiStore, directory: Directory, quota: Quota, asked: Lease) -> tuple[Quota, Lease, Reserved]:
    """Reserve a create's units: on a holding quota's shards, or on those of a periodic quota's
    period at the create's time (`asked.taken_at`), opening that period's shard 0 on its first
    create. Returns the quota that admitted (the period, for a periodic quota) with the lease as
    placed. A process learns that a quota is periodic from its account item's refusal of the
    holding's write (QuotaIsPeriodic: one failed write per quota and process)."""
    for _ in range(ADMITTING_ATTEMPTS):
        admitting = _admitting(directory, quota, asked.taken_at)
        try:
            lease, reserved = reserve(store, directory, admitting, asked)
        except QuotaIsPeriodic as periodic:
            directory.learn_period(quota, periodic.period)
            continue
        except AccountNotFound:
            if not admitting.period:
                raise
            _open_period(store, quota, admitting, directory, asked.taken_at)
            continue
        return admitting, lease, reserved
    raise StoreUnavailable(f"admission on {quota}: its period kept changing", may_have_landed=False)


def _admitting(directory: Directory, quota: Quota, now: str) -> Quota:
    """Where a create at `now` admits: the quota, or its period at `now` if it is periodic."""
    period = directory.period_of(quota)
    return quota if period is None else quota.in_period(_window(period, now).id)


def _window(period: Period, now: str) -> PeriodWindow:
    return period.window_at(parse_timestamp(now))


def _record_end(directory: Directory, admitting: Quota, now: str) -> int:
    """When a usage record's key is free again and TTL may remove it: RECORD_RETENTION after its
    period's end (or the Idempotency-Key's window, if longer); 0 for a holding's resource."""
    period = directory.period_of(admitting.whole)
    if not admitting.period or period is None:
        return 0
    kept = max(RECORD_RETENTION, directory.settings.tombstone_retention)
    return int((_window(period, now).end + kept).timestamp())


# How long a usage record outlives its period: as long as a stream record may still be replayed
# from a dead-letter queue (14 days, SQS's longest retention), so that a replay finds it and its
# count lands in its own period once; its Idempotency-Key is remembered as long.
RECORD_RETENTION = timedelta(days=14)


def _open_period(store: ApiStore, quota: Quota, period: Quota, directory: Directory, now: str) -> None:
    """Open `period`'s shard 0 from its quota's account item: its limit and thresholds as they are
    now (a limit change landing first makes the open fail, and the create reads again), and the
    active shards of the period before it. Its items are kept as long as the quota's history
    (HISTORY_RETENTION)."""
    found = store.read_shards(quota, [0])
    if not found:
        raise AccountNotFound(quota)
    account = found[0]
    if account.period is None:
        return  # not periodic (any more): the next attempt finds out
    directory.learn_period(quota, account.period)
    window = account.period.window_with_id(period.period)
    # A busy quota's period opens as spread as the one before it ended, rather than on one shard
    # that its first second's creates would throttle while it grows again.
    before = store.read_shards(quota.in_period(account.period.preceding(window).id), [0])
    active = before[0].active if before else 1
    store.open_period(period, account, now, int((window.end + HISTORY_RETENTION).timestamp()), active)


# How long a periodic quota's periods' admission and counter items are kept after each period's
# end: 13 months of exact totals, for billing and analytics.
HISTORY_RETENTION = timedelta(days=397)


def epoch_seconds(timestamp: str) -> int:
    """An ISO 8601 UTC timestamp of the flows' clock, as epoch seconds (TTL's unit)."""
    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp())


def _landed(store: ApiStore, resource: Resource) -> bool:
    """After an ambiguous put: read back whether this request's item is there."""
    found = _read_quietly(store, resource.quota, resource.resource_id)
    return found is not None and found.request_token == resource.request_token


def _settle_dead_on_sight(
    store: ApiStore,
    directory: Directory,
    quota: Quota,
    seen: Sequence[Lease],
    now: str,
    in_time: Deadline,
) -> None:
    """Settle the dead leases this request's first write saw on its shard, once there are
    `settle_dead_at` of them, after the request's own writes (so they are never delayed by it;
    its answer is, by one read and one write, only when there are).

    A request that dies between its two shard writes leaves its lease, and on a busy account only
    the sweeper settles it, every five minutes. Each one makes every write of the shard larger, and
    writes are billed per KB: a shard whose writes are throttled leaves more of them, which makes
    each write cost more, which throttles more. A failure here leaves them to the sweeper, and
    fails nothing."""
    if in_time():
        settle_dead_seen(store, directory, quota, seen, now, at_least=directory.settings.settle_dead_at)


def _settle_quietly(store: ApiStore, quota: Quota, lease: Lease, settlement: Settlement, now: str) -> None:
    try:
        store.settle(quota, lease, settlement, now)
    except StoreUnavailable:
        logger.warning("could not settle %s lease %s on %s; a heal will", lease.kind.value, lease.token, quota)


def _replay(earlier: Resource, fingerprint: str) -> Created:
    if earlier.request_fingerprint != fingerprint:
        raise IdempotencyKeyMismatch()
    if earlier.deleted:
        raise IdempotencyKeyReused(earlier.resource_id)
    return Created(resource=earlier, replayed=True)


@dataclass(frozen=True)
class Admission:
    """Whether a create of `amount` units would be admitted now: `free`, the units the quota's
    admission shards could still admit when read; `shadow`: the quota is in shadow mode, which
    admits past its limit (docs/plans.md, "Shadow mode")."""

    amount: int
    free: int
    shadow: bool = False

    @property
    def admitted(self) -> bool:
        return self.shadow or self.free >= self.amount


def would_admit(store: ApiStore, quota: Quota, amount: int, now: str | None = None) -> Admission:
    """Whether a create of `amount` units would be admitted now, reserving nothing: the room of
    the quota's shards, read one after another (one read for a quiet account; for a periodic quota,
    its period's at `now`, all of its limit before its first create). Advisory: a create a moment
    later may find less room or more (docs/api.md), and the create alone decides."""
    found = store.read_shards(quota, [0])
    if not found:
        raise AccountNotFound(quota)
    account = found[0]
    if account.period is not None and now is not None:
        period = quota.in_period(_window(account.period, now).id)
        opened = store.read_shards(period, [0])
        if not opened:
            return Admission(amount, max(0, account.limit))
        quota, account = period, opened[0]
    others = store.read_shards(quota, range(1, account.span)) if account.span > 1 else []
    free = max(0, account.room + sum(shard.room for shard in others))
    return Admission(amount, free, shadow=account.mode == QuotaMode.SHADOW)


def get_resource(store: ApiStore, quota: Quota, resource_id: str) -> Resource:
    resource = store.get_resource(quota, resource_id)
    if resource is None or resource.deleted:
        raise ResourceNotFound(quota, resource_id)
    return resource


def list_resources(
    store: ApiStore,
    quota: Quota,
    limit: int,
    cursor: str | None,
    budget: PageBudget | None = None,
    now: str | None = None,
) -> Page:
    """A page of the quota's live resources; a periodic quota's usage records of its period at `now`."""
    usage = get_usage(store, quota, now)  # 404 for an unknown account rather than an empty list
    if usage.window is not None:
        quota = quota.in_period(usage.window.id)
    return store.list_resources(quota, limit, cursor, budget)


def delete_resource(
    store: ApiStore,
    quota: Quota,
    resource_id: str,
    clock: Clock,
    token: TokenSource = leases.new_token,
    in_time: Deadline = _always,
    directory: Directory | None = None,
) -> None:
    """Soft-delete a live resource and free its slot on the shard that admitted it.

    An account that never had more than one shard (every quiet account) admitted everything on
    shard 0, so its delete makes three writes and no read: the take on shard 0 (refused if the
    account has grown shards since, which this process then learns), the soft delete (conditional
    on the resource being live and admitted by shard 0) and the finish. A busy account's delete
    reads the resource first, to learn its shard (and its amount). A 404 costs the take, a read and
    the undo.

    The quiet path takes 1 from best-effort, and its soft delete is conditional on the resource's
    amount being 1: a resource of amount N refuses it, and the refusal's old item says N, so the
    delete gives back the 1 and takes N (three writes more than a delete of amount 1).

    A usage record of a periodic quota is deleted (refunded) within its period only, on its
    period's shards (PeriodClosed after it): its delete reads it first."""
    directory = directory or Directory()
    known = directory.layout(quota)
    current: Resource | None = None
    if directory.period_of(quota) is None and (known is None or known[1] <= 1):
        if not in_time():
            raise CallerGaveUp()
        now = clock()
        lease = Lease(LeaseKind.DELETION, token(), resource_id, now, 0)
        try:
            seen = store.take_deletion(quota, lease, only_unsharded=True)
        except AccountNotFound as missing:
            raise ResourceNotFound(quota, resource_id) from missing
        except QuotaIsPeriodic as periodic:  # nothing written: read the record first
            directory.learn_period(quota, periodic.period)
            seen = None
        landed = False
        if seen is None:
            if directory.period_of(quota) is None:
                learn_layout(store, directory, quota)  # it has shards: read first from now on
        else:
            try:
                landed = _soft_delete(store, quota, lease, now)
            except AmountDiffers as differs:
                current = differs.existing if isinstance(differs.existing, Resource) else None  # given back
        if landed:
            _settle_dead_on_sight(store, directory, quota, seen or (), now, in_time)
            return
        if seen is not None and current is None:
            # Not live, or live but admitted by another shard (put after the account grew).
            current = _read_quietly(store, quota, resource_id)
            if current is None or current.shard == 0:
                raise ResourceNotFound(quota, resource_id)
    current = current or store.get_resource(quota, resource_id)
    for _ in range(RESIZE_ATTEMPTS):
        if current is None or current.deleted:
            raise ResourceNotFound(quota, resource_id)
        if not in_time():
            raise CallerGaveUp()
        now = clock()
        admitting = _in_its_period(store, directory, current, now)
        lease = Lease(LeaseKind.DELETION, token(), resource_id, now, current.shard, current.amount)
        seen = store.take_deletion(admitting, lease)
        if seen is None:
            raise StoreUnavailable("take deletion lease: a token taken twice", may_have_landed=False)
        try:
            landed = _soft_delete(store, admitting, lease, now)
        except AmountDiffers as differs:  # resized since we read it: given back, take what it holds now
            current = differs.existing if isinstance(differs.existing, Resource) else None
            continue
        if not landed:
            raise ResourceNotFound(quota, resource_id)  # another delete won
        _settle_dead_on_sight(store, directory, admitting, seen, now, in_time)
        return
    raise StoreUnavailable(f"delete {resource_id}: the resource kept being resized", may_have_landed=False)


# Attempts of a resize (or of a delete's soft delete) against concurrent resizes of the resource.
RESIZE_ATTEMPTS = 8


def _in_its_period(store: ApiStore, directory: Directory, resource: Resource, now: str) -> Quota:
    """The quota whose shards a change of `resource` at `now` writes: the one that admitted it. A
    usage record changes only within its period: PeriodClosed after it."""
    admitting = resource.quota
    if not admitting.period:
        return admitting
    period = directory.period_of(admitting.whole)
    if period is None:
        found = store.read_shards(admitting.whole, [0])
        period = found[0].period if found else None
        if period is None:
            raise PeriodClosed(admitting, resource.resource_id)  # its quota is no longer periodic
        directory.learn_period(admitting.whole, period)
    if _window(period, now).id != admitting.period:
        raise PeriodClosed(admitting, resource.resource_id)
    return admitting


def resize_key(quota: Quota, resource_id: str, idempotency_key: str) -> str:
    """What a resource keeps of the Idempotency-Key of its last resize: a hash, as a keyed create's
    id is one."""
    scope = f"{quota.account_id}\n{quota.resource_type}\n{resource_id}\n{idempotency_key}"
    return hashlib.sha256(scope.encode()).hexdigest()[:32]


def resize_resource(
    store: ApiStore,
    quota: Quota,
    resource_id: str,
    amount: int,
    clock: Clock,
    if_match: frozenset[int] | None = None,
    idempotency_key: str | None = None,
    token: TokenSource = leases.new_token,
    in_time: Deadline = _always,
    directory: Directory | None = None,
    on_shadow: Callable[[LimitExceeded], None] | None = None,
) -> Resource:
    """Set a live resource's amount, reserve-then-settle style: growing takes the added units as a
    create takes its amount (LimitExceeded, with the resource unchanged, when fewer are free), on
    the shard that admitted the resource, where its delete frees them; shrinking frees units at once.

    Three writes, as a create makes: a lease on the resource's shard (a growth reserves its units,
    a shrink takes them from best-effort), the resource's write (its amount, at its next version,
    conditional on the version read), then the lease settled (a growth counted in best-effort, a
    shrink's units freed). The resource write decides which of racing resizes and deletes wins; a
    loser gives its lease back and reads again. `if_match`: only at those versions (ResourceChanged
    otherwise). A retry with the same `idempotency_key` after that resize landed answers the
    resource as it is (IdempotencyKeyMismatch if the key came with another amount); with If-Match
    too, a retry after another resize is ResourceChanged, never applied twice. A growth past a
    shadow quota's limit is made, and `on_shadow` told of the refusal enforcement would
    have made (docs/plans.md, "Shadow mode")."""
    directory = directory or Directory()
    key = "" if idempotency_key is None else resize_key(quota, resource_id, idempotency_key)
    for _ in range(RESIZE_ATTEMPTS):
        current = store.get_resource(quota, resource_id)
        if current is None or current.deleted:
            raise ResourceNotFound(quota, resource_id)
        if key and current.resize_key == key:
            if current.amount != amount:
                raise IdempotencyKeyMismatch()
            return current  # a retry of this resize, which landed (and is the resource's last)
        if if_match is not None and current.version not in if_match:
            raise ResourceChanged(quota, resource_id, current.version)
        if current.amount == amount:
            return current  # nothing to change: no write
        if not in_time():
            raise CallerGaveUp()
        now = clock()
        admitting = _in_its_period(store, directory, current, now)
        shadowed: list[LimitExceeded] = []
        resized = _resize_once(store, directory, admitting, current, amount, key, now, token(), in_time, shadowed)
        if resized is not None:
            if shadowed and on_shadow is not None:
                on_shadow(shadowed[0])
            return resized
    raise StoreUnavailable(f"resize {resource_id}: the resource kept changing", may_have_landed=False)


def _resize_once(
    store: ApiStore,
    directory: Directory,
    quota: Quota,
    current: Resource,
    amount: int,
    key: str,
    now: str,
    token: str,
    in_time: Deadline,
    shadowed: list[LimitExceeded] | None = None,
) -> Resource | None:
    """One resize of `current` as read; None when it changed first (this resize's lease given back).
    A growth admitted past a shadow quota's limit adds the refusal it was spared to `shadowed`."""
    units = amount - current.amount
    kind = LeaseKind.GROWTH if units > 0 else LeaseKind.SHRINK
    lease = Lease(kind, token, current.resource_id, now, current.shard, abs(units), from_version=current.version)
    if kind is LeaseKind.GROWTH:
        reserved = _reserve_growth(store, directory, quota, lease)
        if reserved.shadowed is not None and shadowed is not None:
            shadowed.append(reserved.shadowed)
        undo, done = in_units(RELEASE_RESERVATION, lease.units), in_units(COMMIT_RESERVATION, lease.units)
        done = replace(done, expected_heal_epoch=reserved.heal_epoch)
    else:
        if store.take_deletion(quota, lease) is None:
            raise StoreUnavailable("take shrink lease: no such shard, or a token taken twice", may_have_landed=False)
        undo, done = in_units(UNDO_DELETION, lease.units), in_units(FINISH_DELETION, lease.units)
    if not in_time():
        _settle_quietly(store, quota, lease, undo, now)
        raise CallerGaveUp()
    try:
        resized = store.resize(current, amount, lease.token, key, now)
    except StoreUnavailable as failure:
        found = None if not failure.may_have_landed else _read_quietly(store, quota, current.resource_id)
        if found is None or found.resize_token != lease.token:
            if not failure.may_have_landed:
                _settle_quietly(store, quota, lease, undo, now)  # certainly not resized
            raise  # unknown: the lease stays until a heal finds out (docs/healing.md)
        resized = found
    if resized is None:
        _settle_quietly(store, quota, lease, undo, now)  # resized or deleted first: read again
        return None
    try:
        if store.settle(quota, lease, done, now) is Settled.EPOCH_MOVED:
            store.settle(quota, lease, DROP, now)  # a heal since the reservation: as a create's count
    except StoreUnavailable:
        logger.warning("could not settle resize lease %s on %s; a heal will", lease.token, quota)
    return resized


def _reserve_growth(store: ApiStore, directory: Directory, quota: Quota, lease: Lease) -> Reserved:
    """Reserve a growth's units on its resource's shard, moving room there when it lacks them;
    LimitExceeded when the account's free units at one instant are fewer. A shadow quota's growth
    is reserved past the limit instead (`Reserved.shadowed`): on its resource's shard, its units
    taken from shard 0's room, the only room that may go below zero."""
    for _ in range(directory.settings.attempts):
        reserved = store.reserve_on(quota, lease)
        if reserved is not None:
            return reserved
        try:
            bring_room_to(store, quota, lease.shard, lease.units, epoch_ms(lease.taken_at))
        except AccountFull as full:
            if not full.shadow:
                raise
            past = store.reserve_shadow(quota, lease)
            if past is not None:
                return replace(past, shadowed=full)
    raise StoreUnavailable(f"resize on {quota}: the room found was taken first", may_have_landed=False)


def _soft_delete(store: ApiStore, quota: Quota, lease: Lease, now: str) -> bool:
    """The soft delete after `lease` was taken (best-effort decremented while the resource is still
    live, so best_effort never exceeds the live count; the lease tells a heal the delete is in
    flight). If it landed, free the slot: only the request whose soft delete landed does, and only
    after the resource stopped being live, so `admitted` never drops below the live count. If it
    did not, give back the decrement, exactly once (and raise AmountDiffers when the resource holds
    another amount than the lease took)."""
    try:
        landed = store.soft_delete(quota, lease.resource_id, now, lease.token, lease.shard, lease.units)
    except AmountDiffers:
        _settle_quietly(store, quota, lease, in_units(UNDO_DELETION, lease.units), now)
        raise
    except StoreUnavailable:
        found = _read_quietly(store, quota, lease.resource_id)
        if found is None or found.delete_token != lease.token:
            raise  # unknown: the lease stays until a heal finds out
        landed = True
    _settle_quietly(store, quota, lease, in_units(FINISH_DELETION if landed else UNDO_DELETION, lease.units), now)
    return landed


def _read_quietly(store: ApiStore, quota: Quota, resource_id: str) -> Resource | None:
    try:
        return store.get_resource(quota, resource_id)
    except StoreUnavailable:
        return None
