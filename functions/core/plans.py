"""Plans (docs/plans.md): a named set of quotas, one per resource type, that accounts are put on.

A plan is one item, versioned as an account's limit is (its ETag); an account on a plan has each
of the plan's quotas set through the limit-setting path a type's PUT takes (`accounts.put_limit`:
its Limit Changed event, crossings, periods and ordering as a PUT's), each with a token derived
from the plan, its version, the account and the type, so a retry or a later application of the
same version finds its own write and changes nothing twice. The account's membership (the plan and
the version given) is written last, on its default type's account item: a failed application
leaves it as it was, and its retry resumes.

A type's own PUT on an account whose plan gives that type is an override, for that account only
(its account item says so, `limit_source`); an application of the plan leaves it standing, and
removing it (`remove_override`) gives the type the plan's limit again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from functions.core import accounts, leases
from functions.core.accounts import IMPLICIT_ACCOUNT, PUT_ACCOUNT_ATTEMPTS, ApiStore, Clock, Deadline, LimitChange
from functions.core.errors import (
    AccountNotFound,
    CallerGaveUp,
    OverrideNotFound,
    PlanNotFound,
    PlanPreconditionFailed,
    StoreUnavailable,
)
from functions.core.model import AccountUsage, LimitSource, Quota, QuotaMode, Usage
from functions.core.periods import Period


@dataclass(frozen=True)
class PlanQuota:
    """One type's quota in a plan, as a type's PUT gives it: its limit, and its thresholds and
    period if the plan gives them (None: an account's quota keeps what it has)."""

    limit: int
    thresholds: tuple[int, ...] | None = None
    period: Period | None = None
    mode: str = QuotaMode.ENFORCE  # given to the accounts' types as it is (model.QuotaMode)


@dataclass(frozen=True)
class Plan:
    """A plan at one version: its quotas by type name (named types only: an account's default
    type is never a plan's, docs/plans.md)."""

    name: str
    version: int
    quotas: Mapping[str, PlanQuota] = field(default_factory=dict)
    updated_at: str = ""
    updated_by: str = ""


@dataclass(frozen=True)
class PlanPage:
    items: tuple[Plan, ...]
    next_cursor: str | None


@dataclass(frozen=True)
class AccountEntry:
    """An account as the registry lists it: its id and its membership (None, 0: on no plan)."""

    account_id: str
    plan: str | None = None
    plan_version: int = 0


@dataclass(frozen=True)
class AccountPage:
    items: tuple[AccountEntry, ...]
    next_cursor: str | None


class PlanStore(Protocol):
    def read_plan(self, name: str) -> Plan | None:
        """The plan, strongly consistent; None if there is none of that name."""
        ...

    def write_plan(self, plan: Plan, read_version: int) -> bool:
        """Write `plan` whole if the stored one is still at `read_version` (0: none stored); False if not."""
        ...

    def list_plans(self, limit: int, cursor: str | None) -> PlanPage:
        """Up to `limit` plans after `cursor`, by name (one Query of the plans' partition)."""
        ...

    def list_accounts(self, plan: str | None, limit: int, cursor: str | None) -> AccountPage:
        """Up to `limit` accounts after `cursor`: the plan's by id, or (None) every account, those on
        no plan first, then each plan's by plan name (the accounts index, Queries only)."""
        ...

    def set_membership(self, account_id: str, plan: str, version: int, received_ms: int) -> bool:
        """Record on the account's default account item that it was given `plan` at `version` in
        full by a PUT received at `received_ms`, unless a PUT received later recorded another; False then."""
        ...

    def follow_plan(self, account_id: str, plan: str, received_ms: int) -> bool:
        """Date the account's membership of `plan` no earlier than `received_ms`, its version kept:
        a type returned to the plan by a change received then takes the plan's later versions,
        which a rollout gives as of the membership. False if the account is on no plan or another."""
        ...


class PlansStore(ApiStore, PlanStore, Protocol):
    """What the plan flows need: the API's store, and the plans'."""


def put_plan(
    store: PlanStore,
    name: str,
    quotas: Mapping[str, PlanQuota],
    now: str,
    changed_by: str = "",
    if_match: frozenset[int] | None = None,
    must_exist: bool = False,
) -> Plan:
    """Create the plan or replace its quotas, at its next version. The same quotas again change
    nothing and answer the plan as it is, whatever If-Match says (the version stays: its accounts
    have nothing new to be given; a retry of a PUT that landed is no 412). `if_match`: only at
    those versions; `must_exist`: only if it exists (If-Match: *). PlanPreconditionFailed otherwise."""
    for _ in range(PUT_ACCOUNT_ATTEMPTS):
        current = store.read_plan(name)
        if current is not None and dict(current.quotas) == dict(quotas):
            return current  # nothing to change (a retry of a PUT that landed, If-Match or not)
        if current is None and (must_exist or if_match is not None):
            raise PlanPreconditionFailed(name, None)
        if current is not None and if_match is not None and current.version not in if_match:
            raise PlanPreconditionFailed(name, current.version)
        read_version = 0 if current is None else current.version
        plan = Plan(name, read_version + 1, dict(quotas), now, changed_by)
        if store.write_plan(plan, read_version):
            return plan
    raise StoreUnavailable(f"put plan {name}: the plan kept changing", may_have_landed=False)


def get_plan(store: PlanStore, name: str) -> Plan:
    plan = store.read_plan(name)
    if plan is None:
        raise PlanNotFound(name)
    return plan


def plan_token(plan: Plan, quota: Quota) -> str:
    """The request token of a plan's application to one quota: the same for every application of
    this version of the plan to it, so the one that landed is recognised by the quota's item."""
    scope = f"plan\n{plan.name}\n{plan.version}\n{quota.account_id}\n{quota.resource_type}"
    return hashlib.sha256(scope.encode()).hexdigest()[:32]


def plan_change(plan: Plan, quota: Quota, received_ms: int, changed_by: str, keeps_override: bool) -> LimitChange:
    """The change that gives `quota` its plan's quota."""
    given = plan.quotas[quota.resource_type]
    return LimitChange(
        limit=given.limit,
        received_ms=received_ms,
        token=plan_token(plan, quota),
        changed_by=changed_by,
        thresholds=given.thresholds,
        period=given.period,
        source=LimitSource.PLAN,
        keeps_override=keeps_override,
        mode=given.mode,
    )


def own_limit(usage: Usage, received_ms: int, changed_by: str) -> LimitChange:
    """The change that keeps a quota's limit as the account's own (a type its new plan lacks)."""
    return LimitChange(
        limit=usage.limit,
        received_ms=received_ms,
        token=leases.new_token(),
        changed_by=changed_by,
        source=LimitSource.ACCOUNT,
    )


def join_plan(
    store: PlansStore,
    account_id: str,
    name: str,
    received_ms: int,
    clock: Clock,
    in_time: Deadline,
    changed_by: str = "",
    if_match: frozenset[int] | None = None,
    must_exist: bool = False,
) -> AccountUsage:
    """Put the account on the plan (creating the account, its default type at limit 0, if it has
    none): each of the plan's quotas, type by type, but the account's overrides; then each type a
    plan gave it that this one lacks keeps its limit as the account's own; then the membership.
    PlanNotFound, with nothing written, for a plan that does not exist. `if_match`/`must_exist`:
    the account's ETag (its default type's limit version), checked before anything is written."""
    plan = get_plan(store, name)
    if not in_time():
        raise CallerGaveUp()
    account = Quota(account_id)
    read = store.read_account(account_id)
    change = LimitChange(limit=0, received_ms=received_ms, token="", if_match=if_match, must_exist=must_exist)
    if if_match is not None or must_exist:
        shards = store.read_shards(account, [0]) if read is not None else []
        change.check(account, shards[0] if shards else None)
    if read is not None and (read.default.plan, read.default.plan_version) == (plan.name, plan.version):
        return accounts.get_account(store, account_id, clock())  # given in full already
    for resource_type in sorted(plan.quotas):
        quota = Quota(account_id, resource_type)
        accounts.put_limit(store, quota, plan_change(plan, quota, received_ms, changed_by, True), clock, in_time)
    for usage in () if read is None else read.types:
        if usage.limit_source != LimitSource.ACCOUNT and usage.quota.resource_type not in plan.quotas:
            accounts.put_limit(store, usage.quota, own_limit(usage, received_ms, changed_by), clock, in_time)
    if read is None and not plan.quotas:
        store.create_account(account, IMPLICIT_ACCOUNT, clock())
    if not in_time():
        raise CallerGaveUp()
    store.set_membership(account_id, plan.name, plan.version, received_ms)
    latest = store.read_plan(name)
    if latest is not None and latest.version > plan.version:
        # The plan changed while it was given: its rollout may have paged the plan's accounts before
        # this membership was written (functions/core/rollout.py), so the account takes it here.
        return join_plan(store, account_id, name, received_ms, clock, in_time, changed_by)
    return accounts.get_account(store, account_id, clock())


def remove_override(
    store: PlansStore, quota: Quota, received_ms: int, clock: Clock, in_time: Deadline, changed_by: str = ""
) -> Usage:
    """Give the type its account's plan's limit again (one Limit Changed event if it differs).
    OverrideNotFound if its limit is not an override; AccountNotFound if it has none. Should the
    plan no longer give the type, its limit stays, as the account's own."""
    found = store.read_shards(quota, [0])
    if not found:
        raise AccountNotFound(quota)
    if found[0].limit_source != LimitSource.OVERRIDE:
        raise OverrideNotFound(quota)
    default = store.read_usage(quota.default_quota)
    plan = store.read_plan(default.plan) if default is not None and default.plan else None
    if plan is None or quota.resource_type not in plan.quotas:
        usage = accounts.get_usage(store, quota, clock())
        return accounts.put_limit(store, quota, own_limit(usage, received_ms, changed_by), clock, in_time)
    return return_to_plan(store, quota, plan, plan_change(plan, quota, received_ms, changed_by, False), clock, in_time)


def return_to_plan(
    store: PlansStore, quota: Quota, plan: Plan, change: LimitChange, clock: Clock, in_time: Deadline
) -> Usage:
    """Give a type whose limit was an override its plan's quota again (`change`). A rollout gives
    an account the plan's versions as of its membership (functions/core/rollout.py), and this
    change is received after that: the membership is dated no earlier first, or the plan's later
    versions would be older than the type's limit and never reach it."""
    store.follow_plan(quota.account_id, plan.name, change.received_ms)
    return accounts.put_limit(store, quota, change, clock, in_time)
