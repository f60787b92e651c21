"""Value objects of the domain. Plain dataclasses: no boto3, no HTTP."""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from functions.core.periods import Period, PeriodWindow

# Ids appear in keys and URLs: keep them to a safe alphabet and a bounded length.
MAX_ID_LENGTH = 64
# A resource's amount: the units of its quota it holds, at least 1, at most what every JSON
# client reads exactly (2^53 - 1, the largest integer an IEEE double holds exactly).
MAX_AMOUNT = 2**53 - 1
ID_PATTERN = rf"^[A-Za-z0-9_-]{{1,{MAX_ID_LENGTH}}}$"
# A period's id: its start, UTC (functions/core/periods.py, PeriodWindow.id).
PERIOD_ID_PATTERN = r"^[0-9]{8}T[0-9]{6}Z$"
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"  # printable ASCII without spaces

# Namespace for ids derived from Idempotency-Key: the same key in the same quota always names
# the same resource, so the resource's conditional create is itself the idempotency check.
_IDEMPOTENT_ID_NAMESPACE = uuid.UUID("6f3c5d1e-2a4b-4c8d-9e0f-1a2b3c4d5e6f")
# Namespace for the records of keyed PUTs (functions/core/accounts.py, `put_account`).
_IDEMPOTENT_PUT_NAMESPACE = uuid.UUID("0b9d8c2e-5f41-4e7a-a3c6-2d8e1f7b9a54")

# An account's limits, one per resource type (projects, seats, ...). The default type is the one the
# routes without a type mean (`/accounts/{id}/resources`), and the one a table written without types
# holds: its keys are that table's.
DEFAULT_RESOURCE_TYPE = "default"
# Type names appear in keys (after the account id and a `#`, which neither may hold) and in URLs.
RESOURCE_TYPE_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"
# Types an account may have besides the default: each name is held in the account item, which the
# default type writes on every create and delete, and a write is billed per KB (docs/scaling.md).
MAX_RESOURCE_TYPES = 50


class LimitSource:
    """Where a quota's limit comes from, as its account item records it (docs/plans.md): set by its
    own PUT on an account without a plan (`account`, what every limit was before plans), given by
    the account's plan (`plan`), or a type's own PUT on an account whose plan gives it (`override`)."""

    ACCOUNT = "account"
    PLAN = "plan"
    OVERRIDE = "override"


class QuotaMode:
    """How a quota applies its limit (docs/plans.md, "Shadow mode"): `enforce` refuses a create
    past it with 409 LimitExceeded (every quota before shadow mode); `shadow` admits it anyway,
    counts it as any other, and announces the refusal enforcement would have made."""

    ENFORCE = "enforce"
    SHADOW = "shadow"


@dataclass(frozen=True, order=True)
class Quota:
    """One limit of an account: the account and the resource type it limits. Every flow's limit,
    counters, shards, resources and heal are a quota's; the tenant (its rate limit, who may call)
    is the account."""

    account_id: str
    resource_type: str = DEFAULT_RESOURCE_TYPE
    # One period of a periodic quota (functions/core/periods.py, the window's id): its admission
    # shards and counters are its own, so each period starts at 0 with no write at its boundary.
    # "": a holding quota, or a periodic quota as a whole (its limit, period and records).
    period: str = ""

    def __str__(self) -> str:
        """As logs and operators name it: the account, the type when it is not the default, and
        the period when it is one."""
        name = self.account_id if self.is_default else f"{self.account_id}/{self.resource_type}"
        return f"{name}@{self.period}" if self.period else name

    @property
    def whole(self) -> Quota:
        """The quota without its period: what holds its limit, its period and its records."""
        return Quota(self.account_id, self.resource_type) if self.period else self

    def in_period(self, period: str) -> Quota:
        """The quota's period `period` (a window id)."""
        return Quota(self.account_id, self.resource_type, period)

    @property
    def is_default(self) -> bool:
        return self.resource_type == DEFAULT_RESOURCE_TYPE

    @property
    def default_quota(self) -> Quota:
        """The account's default type: its account item holds the account's rate limit and types."""
        return Quota(self.account_id)


@dataclass(frozen=True)
class Usage:
    """A quota's limit and both counters, read together with strong consistency."""

    quota: Quota
    limit: int
    best_effort_net: int  # signed: a delete's decrement may land before its create's increment
    eventual: int
    rate: TenantRate | None = None  # the account's own rate limit; None: the stack's default
    limit_version: int = 0  # bumped by each limit change: the account's ETag
    thresholds: tuple[int, ...] | None = None  # the quota's own usage thresholds; None: the defaults
    # A periodic quota's period, and the one its counters are of (the current one when read):
    # None for a holding quota.
    period: Period | None = None
    window: PeriodWindow | None = None
    limit_source: str = LimitSource.ACCOUNT  # where its limit comes from (LimitSource)
    plan: str | None = None  # the default type's only: the account's plan, if it is on one
    plan_version: int = 0  # and the version of it the account was last given
    # An override that expires (docs/plans.md, "Expiring grants"): when it ends, epoch ms; None
    # for every other limit.
    grant_ends: int | None = None
    plan_set_at: int = 0  # and when the PUT that put it on the plan was received (epoch ms)
    mode: str = QuotaMode.ENFORCE  # QuotaMode: a shadow quota admits past its limit

    @property
    def account_id(self) -> str:
        return self.quota.account_id

    @property
    def best_effort(self) -> int:
        return max(0, self.best_effort_net)

    @property
    def used(self) -> int:
        return max(self.best_effort, self.eventual)

    @property
    def available(self) -> int:
        return max(0, self.limit - self.used)


@dataclass(frozen=True)
class AccountUsage:
    """An account's limits: its default type's usage (which carries the account's rate limit), and
    each other type's, by type name."""

    default: Usage
    types: tuple[Usage, ...] = ()

    @property
    def every_type(self) -> tuple[Usage, ...]:
        return (self.default, *self.types)


@dataclass(frozen=True)
class NewResource:
    """What a caller asks to create."""

    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    amount: int = 1  # units of the quota it holds

    def fingerprint(self) -> str:
        """Stable hash of the request body, to tell a replay from a different request. The amount
        is part of it only when it is not 1, so a replay of a request from before amounts matches."""
        body: dict[str, Any] = {"name": self.name, "attributes": self.attributes}
        if self.amount != 1:
            body["amount"] = self.amount
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class Resource:
    quota: Quota  # the limit that admitted it
    resource_id: str
    name: str
    attributes: dict[str, Any]
    created_at: str
    request_fingerprint: str
    request_token: str  # unique per create attempt: tells our own landed write from another's
    deleted: bool = False  # soft-deleted, or a tombstone
    counter_processed: bool = False
    delete_token: str = ""  # the token of the delete whose soft delete landed
    tombstone: bool = False  # counted and removed: only the key, tokens and fingerprint remain
    shard: int = 0  # the admission shard that admitted it, and releases it (functions/core/admission.py)
    # A tombstone's end, or a usage record's (its period's end and the retention), epoch seconds:
    # its key is free again after it.
    expires_at: int = 0
    amount: int = 1  # units of its quota it holds (every resource of an older release holds 1)
    # Bumped by each resize (1: never resized): the resource's ETag, and what a resize is conditional on.
    version: int = 1
    resize_token: str = ""  # the token of the resize that made this version ("" for version 1)
    resize_key: str = ""  # that resize's Idempotency-Key, hashed ("" when it had none)

    @property
    def account_id(self) -> str:
        return self.quota.account_id

    def expired(self, now_epoch: int) -> bool:
        """A tombstone past its retention, or a usage record past its period and the retention,
        which TTL has not removed yet (it may take days): its Idempotency-Key's window is over,
        and a create with that key makes a new resource."""
        return (self.tombstone or bool(self.quota.period)) and 0 < self.expires_at <= now_epoch


@dataclass(frozen=True)
class Page:
    items: list[Resource]
    next_cursor: str | None


@dataclass(frozen=True)
class PageBudget:
    """How much room a page's items may take, in what `size_of` measures (the API: the bytes of
    its answer, which Lambda caps)."""

    room: int
    size_of: Callable[[Resource], int]

    def fitting(self, items: list[Resource]) -> list[Resource]:
        """The longest run of `items` from the first that fits; the first always does, so every
        page moves on."""
        taken = 0
        for count, item in enumerate(items):
            taken += self.size_of(item)
            if taken > self.room and count:
                return items[:count]
        return items


def idempotent_resource_id(quota: Quota, idempotency_key: str) -> str:
    """The resource an Idempotency-Key names in a quota: always the same one, and another one in
    each other type of the account (the same key on two types is two requests). The default type's
    are the ids a key names on a table written without types, so a retry that spans an upgrade finds
    its resource."""
    scope = quota.account_id if quota.is_default else f"{quota.account_id}\n{quota.resource_type}"
    return str(uuid.uuid5(_IDEMPOTENT_ID_NAMESPACE, f"{scope}\n{idempotency_key}"))


def idempotent_put_id(idempotency_key: str) -> str:
    """The record an Idempotency-Key names among a quota's PUTs (in the quota's partition, so
    the same key on two types is two requests): the key itself stays out of the table."""
    return str(uuid.uuid5(_IDEMPOTENT_PUT_NAMESPACE, idempotency_key))


def random_resource_id() -> str:
    return str(uuid.uuid4())


# A tenant's rate limit (functions/core/rate_limits.py enforces it): its bounds, and how its window's
# count is split over items.
MAX_REQUESTS_PER_SECOND = 100_000
MAX_WINDOW_SECONDS = 60
# One part of a window per this many requests a second: a tenant at the default rate (1,000/s) has
# one item a window; at 20,000/s, 20. Served by about one environment per 20 requests a second
# (50 ms a request), each leasing about LEASES_PER_WINDOW times a window, a part then takes about
# 4 * 1,000 / 20 / window_seconds writes a second: 100 in 2 s windows, a tenth of an item's 1,000.
REQUESTS_PER_SECOND_PER_PART = 1_000
MAX_WINDOW_PARTS = 100


@dataclass(frozen=True)
class TenantRate:
    """A tenant's limit: requests a second on average, over windows of `window_seconds`."""

    requests_per_second: int
    window_seconds: int

    def __post_init__(self) -> None:
        if not 1 <= self.requests_per_second <= MAX_REQUESTS_PER_SECOND:
            raise ValueError(f"requests per second must be 1 to {MAX_REQUESTS_PER_SECOND}")
        if not 1 <= self.window_seconds <= MAX_WINDOW_SECONDS:
            raise ValueError(f"the window must be 1 to {MAX_WINDOW_SECONDS} seconds")

    @property
    def burst(self) -> int:
        """The requests a window allows, all at once if they come so."""
        return self.requests_per_second * self.window_seconds

    @property
    def window_ms(self) -> int:
        return self.window_seconds * 1000

    @property
    def parts(self) -> int:
        """Items a window's count is split over (functions/core/rate_limits.py says why)."""
        return self.parts_at(REQUESTS_PER_SECOND_PER_PART)

    def parts_at(self, requests_per_part: float) -> int:
        """Items a window's count is split over with one per `requests_per_part` requests a second
        (scaled partition limits scale it: local/runtime.py, scaled_environment), and never more
        parts than the window allows requests, so that each part allows one at least."""
        return min(MAX_WINDOW_PARTS, self.burst, math.ceil(self.requests_per_second / requests_per_part))

    def window_at(self, now_ms: int, requests_per_part: float = REQUESTS_PER_SECOND_PER_PART) -> Window:
        index = now_ms // self.window_ms
        return Window(
            index=index,
            start_ms=index * self.window_ms,
            length_ms=self.window_ms,
            allowance=self.burst,
            parts=self.parts_at(requests_per_part),
        )


@dataclass(frozen=True)
class Window:
    index: int
    start_ms: int
    length_ms: int
    allowance: int
    parts: int = 1

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.length_ms

    def part_allowance(self, part: int) -> int:
        """Part `part`'s share of the allowance (the parts add up to it exactly)."""
        share, left_over = divmod(self.allowance, self.parts)
        return share + (1 if part < left_over else 0)
