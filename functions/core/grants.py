"""Expiring grants (docs/plans.md, "Expiring grants"): an override of a plan's quota that ends.

A type's `PUT` with `expiresAt` on an account whose plan gives that type is an override that ends
then: its account item carries the end (`grant_ends`, epoch ms) and its entry is written, in the
same transaction, to an index of grants by the hour they end (functions/adapters/grant_index.py).

* **Never admitted past its end.** A reservation on the quota's shard 0 is conditional on the
  reservation's time (the injected clock's) being before the end; at or after it, nothing is written
  and the create (or a resize's growth) ends the grant first (`admitting_past_grants`), then admits
  by the limit that follows it. While a grant stands the quota admits on shard 0 alone (its other
  shards retired when the grant is given, and it does not grow), so no other shard can admit past it.
* **Returns to the plan's limit by itself.** The sweeper, every run, ends the grants whose end has
  passed (`sweep_grants`): a Query per hour of the index, no Scan.
* **Ending a grant** is what `DELETE .../override` does (the plan's quota as it is now, with its
  Limit Changed event), as a change ordered right after the PUT that gave the grant (received 1 ms
  after it) with a token derived from the grant: so every ending of one grant (the sweeper's, any
  number of late creates') writes once, and a PUT received after the grant's (a new override, a
  removal) wins over its ending, however late either lands.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from functions.core import accounts
from functions.core.accounts import Clock, Deadline, LimitChange
from functions.core.errors import GrantEnded, GrantRefused, StoreUnavailable
from functions.core.leases import iso_timestamp
from functions.core.model import LimitSource, Quota
from functions.core.plans import PlansStore, plan_change, return_to_plan

T = TypeVar("T")

# How far ahead a grant may end: a year and a day (a yearly grant given on the 29th of February).
MAX_GRANT = timedelta(days=366)
# Who a grant's ending names as the change's author (Limit Changed's changedBy).
GRANT_EXPIRY = "grant-expiry"
# A create that finds its grant ended ends it and admits again; a grant given anew in between
# (each a PUT) could send it round again, a few times at most.
ENDING_ATTEMPTS = 3


@dataclass(frozen=True)
class GrantEntry:
    """An entry of the grants' index: a grant of `quota` that ends at `ends_ms` (epoch ms)."""

    quota: Quota
    ends_ms: int


class GrantIndex(Protocol):
    def grants_ended(self, since_ms: int, until_ms: int) -> Iterable[GrantEntry]:
        """The entries of grants ending after `since_ms` and no later than `until_ms`."""
        ...

    def forget(self, entry: GrantEntry) -> None: ...


def check_end(quota: Quota, ends_ms: int, now_ms: int) -> int:
    """A grant's end as a PUT asks for it: after `now_ms` (the API's clock) and at most MAX_GRANT
    after it; GrantRefused (a 400, nothing written) otherwise."""
    if ends_ms <= now_ms:
        raise GrantRefused(quota, "must be in the future")
    if ends_ms > now_ms + MAX_GRANT // timedelta(milliseconds=1):
        raise GrantRefused(quota, f"must be at most {MAX_GRANT.days} days ahead")
    return ends_ms


def grant_end_token(quota: Quota, ends_ms: int, granted_ms: int) -> str:
    """The request token of a grant's ending: the same for every ending of that grant."""
    scope = f"grant-end\n{quota.account_id}\n{quota.resource_type}\n{ends_ms}\n{granted_ms}"
    return hashlib.sha256(scope.encode()).hexdigest()[:32]


def end_grant(store: PlansStore, quota: Quota, ends_ms: int, clock: Clock, in_time: Deadline = lambda: True) -> bool:
    """End the grant of `quota` that ends at `ends_ms`, if it still stands: its type takes its
    account's plan's quota as it is now (should the plan no longer give it, it keeps its limit as
    the account's own, as `DELETE .../override` does). False when there was no such grant (ended,
    replaced or removed already); True when this call's change landed or found itself landed."""
    found = store.read_shards(quota, [0])
    if not found or found[0].grant_ends != ends_ms:
        return False
    account = found[0]
    received = account.limit_set_at + 1  # right after the PUT that gave the grant
    token = grant_end_token(quota, ends_ms, account.limit_set_at)
    default = store.read_usage(quota.default_quota)
    plan = store.read_plan(default.plan) if default is not None and default.plan else None
    change: LimitChange
    if plan is None or quota.resource_type not in plan.quotas:
        change = LimitChange(
            limit=account.limit, received_ms=received, token=token, changed_by=GRANT_EXPIRY, source=LimitSource.ACCOUNT
        )
        accounts.put_limit(store, quota, change, clock, in_time)
    else:
        change = replace(plan_change(plan, quota, received, GRANT_EXPIRY, False), token=token)
        return_to_plan(store, quota, plan, change, clock, in_time)
    return True


def admitting_past_grants(admit: Callable[[], T], store: PlansStore, clock: Clock, in_time: Deadline) -> T:
    """`admit()` (a create, a resize): when its reservation finds its quota's grant ended, end the
    grant (nothing of the reservation was written) and admit again, by the limit that follows."""
    for _ in range(ENDING_ATTEMPTS):
        try:
            return admit()
        except GrantEnded as ended:
            end_grant(store, ended.quota, ended.ends, clock, in_time)
    raise StoreUnavailable("admission: the quota's grant kept ending", may_have_landed=False)


@dataclass
class GrantSweep:
    found: int = 0  # entries of grants that ended, read
    ended: int = 0  # grants still standing, ended by this sweep


def sweep_grants(store: PlansStore, index: GrantIndex, now: datetime, lookback: timedelta) -> GrantSweep:
    """End every grant that ended since `lookback` before `now` and still stands, and forget its
    entry (an entry of a grant replaced or removed early is forgotten too)."""
    report = GrantSweep()
    until = int(now.timestamp() * 1000)
    since = int((now - lookback).timestamp() * 1000)
    for entry in list(index.grants_ended(since, until)):
        report.found += 1
        if end_grant(store, entry.quota, entry.ends_ms, lambda: iso_timestamp(now)):
            report.ended += 1
        index.forget(entry)
    return report
