"""What the API answers, as dataclasses: one per response schema of docs/openapi.json, each field
the schema's property of the same name in camelCase (`best_effort` is `bestEffort`), of the type
the schema gives it. A field with `header` in its metadata comes from that response header instead;
a field with a default is a property (or a header) the API may leave out.
tests/client/test_openapi_drift.py fails when these and the document part ways.

Decoding checks every value's type against the field's annotation, so an answer that is not what
the document says is an `UnexpectedResponse`, never a half-filled object.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

M = TypeVar("M")


def json_name(field_name: str) -> str:
    """`best_effort` -> `bestEffort`: the API's names are the fields' names in camelCase."""
    first, *rest = field_name.split("_")
    return first + "".join(part.capitalize() for part in rest)


@dataclass(frozen=True)
class RateLimit:
    """An account's rate limit: `requests_per_second` on average over windows of `burst_seconds`
    (1 to 60), so up to their product may come at once (docs/security.md)."""

    requests_per_second: int
    burst_seconds: int

    def to_json(self) -> dict[str, int]:
        return {json_name(name): value for name, value in dataclasses.asdict(self).items()}


@dataclass(frozen=True)
class TypeUsage:
    """One of an account's limits: its resource type's limit and counts (docs/api.md, "Resource types").
    `thresholds`: its own usage thresholds, ascending; None when it has none (80 and 100 apply).
    `period`: "day" or "month" for a periodic quota, whose counts are its current period's, from
    `period_start` up to `period_end` (exclusive), when it starts again at 0 (docs/periods.md);
    `anchor` the period's anchor if it has one. All four None for a holding quota."""

    account_id: str
    type: str
    limit: int
    best_effort: int  # immediate; may undercount, never overcounts
    eventual: int  # exact once the stream is applied; lags it
    used: int  # max(best_effort, eventual)
    available: int
    limit_source: str = "account"  # or "plan", "override" (docs/plans.md); an API before plans sends none
    mode: str = "enforce"  # or "shadow" (docs/plans.md, "Shadow mode"); an API before it sends none
    thresholds: list[int] | None = None
    period: str | None = None  # "day" or "month"
    anchor: str | None = None  # RFC 3339, as the PUT gave it
    period_start: str | None = None  # RFC 3339, UTC
    period_end: str | None = None  # RFC 3339, UTC, exclusive
    # An expiring grant's end (RFC 3339, UTC): the override returns to the plan's limit then
    # (docs/plans.md, "Expiring grants"); None for any other limit.
    expires_at: str | None = None


@dataclass(frozen=True)
class ResourceType(TypeUsage):
    """A type's limit and counts as its own routes answer them. `etag` is its limit's version, for
    `put_type_limit(if_match=)`: each type's own, apart from the account's and other types'."""

    etag: str = field(metadata={"header": "ETag"}, kw_only=True)


@dataclass(frozen=True)
class TypeList:
    """Every type of an account, the default type first, then by name."""

    items: list[TypeUsage]


@dataclass(frozen=True)
class Account:
    """An account's limit and counts: its default type's (the routes without a type). `etag` is its
    limit's version, for `put_account(if_match=)`. `thresholds`: its own usage thresholds,
    ascending; None when it has none (80 and 100 apply). `types`: its other types, by name; None
    when it has none. `period`, `anchor`, `period_start`, `period_end`: its default type's period,
    as TypeUsage's (None for a holding quota)."""

    account_id: str
    limit: int
    best_effort: int  # immediate; may undercount, never overcounts
    eventual: int  # exact once the stream is applied; lags it
    used: int  # max(best_effort, eventual)
    available: int
    rate_limit: RateLimit  # its own, or the API's default
    etag: str = field(metadata={"header": "ETag"})
    limit_source: str = "account"  # its default type's: always "account" (a plan gives named types only)
    mode: str = "enforce"  # its default type's: or "shadow" (docs/plans.md, "Shadow mode")
    plan: str | None = None  # its plan, if it is on one (docs/plans.md)
    thresholds: list[int] | None = None
    types: list[TypeUsage] | None = None
    period: str | None = None  # "day" or "month"
    anchor: str | None = None  # RFC 3339, as the PUT gave it
    period_start: str | None = None  # RFC 3339, UTC
    period_end: str | None = None  # RFC 3339, UTC, exclusive


@dataclass(frozen=True)
class Plan:
    """A plan (docs/plans.md): its quotas by type name, each as a type's PUT gave it (`{"limit":
    50}`, with `thresholds`, `period` and `anchor` when the plan gives them, and `"mode": "shadow"`
    for a quota the plan gives in shadow mode). `etag` is its version, for `put_plan(if_match=)`."""

    plan: str
    version: int
    quotas: dict[str, Any]
    # `get_plan` only: how many of its accounts have its current version (None from a PUT or a list).
    rollout: PlanRollout | None = field(default=None, compare=False, kw_only=True)
    etag: str | None = field(default=None, metadata={"header": "ETag"}, compare=False, kw_only=True)


@dataclass(frozen=True)
class PlanRollout:
    """A plan change's progress: `updated` of its `accounts` have `version` (all, once it is done)."""

    version: int
    accounts: int
    updated: int


@dataclass(frozen=True)
class PlanPage:
    """One page of plans, by name; `next_cursor` is None on the last."""

    items: list[Plan]
    next_cursor: str | None


@dataclass(frozen=True)
class AccountEntry:
    """An account as the registry lists it: its plan and the plan's version it was given in full
    (None on no plan)."""

    account_id: str
    plan: str | None = None
    plan_version: int | None = None


@dataclass(frozen=True)
class AccountPage:
    """One page of accounts: a plan's by id, or every account's (those on no plan first, then each
    plan's, plans by name); `next_cursor` is None on the last, and a page may be short before it."""

    items: list[AccountEntry]
    next_cursor: str | None


@dataclass(frozen=True)
class Resource:
    """A live resource. `etag`: its version, from the ETag header of `get_resource` and
    `resize_resource` ('"1"' until its first resize; each resize makes the next), for
    `resize_resource(if_match=)`; None from a create or a page, whose answers carry no ETag. Not
    compared: a resource read equals the same resource as its create answered it."""

    account_id: str
    resource_id: str
    name: str
    attributes: dict[str, Any]
    created_at: str  # ISO 8601, as the API wrote it
    amount: int = 1  # the units of its quota it holds (the API leaves 1 out of its answers)
    etag: str | None = field(default=None, metadata={"header": "ETag"}, compare=False, kw_only=True)


@dataclass(frozen=True)
class ResourcePage:
    """One page of an account's resources; `next_cursor` is None on the last."""

    items: list[Resource]
    next_cursor: str | None


@dataclass(frozen=True)
class TypedResource:
    """A resource of a type other than the default, as its type's routes answer it."""

    account_id: str
    resource_id: str
    name: str
    attributes: dict[str, Any]
    created_at: str  # ISO 8601, as the API wrote it
    type: str
    amount: int = 1  # the units of its type's quota it holds
    etag: str | None = field(default=None, metadata={"header": "ETag"}, compare=False, kw_only=True)  # as Resource's


@dataclass(frozen=True)
class Admission:
    """Whether a create of `amount` units would be admitted now (`admitted`), and the units free
    (`free`). Advisory: it reserves nothing, and a create a moment later may find fewer or more."""

    amount: int
    admitted: bool
    free: int


@dataclass(frozen=True)
class AccountDeletion:
    """An account's deletion, accepted: every create of it is refused from now on, and its items
    are erased within the documented bound (docs/plans.md, "Lifecycle"). `requested_at`: when
    the deletion was first asked (a repeat answers the same)."""

    account_id: str
    requested_at: str


@dataclass(frozen=True)
class TypeDeletion:
    """A type's delete: `removed` True when the type is gone; False when its resources are deleted
    (each counted as a delete, every create of it refused meanwhile) and the stream has yet to
    count the deletes: the same call again removes it once it has."""

    account_id: str
    resource_type: str
    removed: bool


@dataclass(frozen=True)
class PeriodTotal:
    """One period of a periodic quota's history: its window (RFC 3339, UTC; `period_end`
    exclusive), its limit, its counts, and whether they are final (`settled`: bill from its
    `eventual`, which never moves again)."""

    period_start: str
    period_end: str
    limit: int
    best_effort: int
    eventual: int
    used: int
    settled: bool


@dataclass(frozen=True)
class PeriodHistory:
    """A periodic quota's current period and the ones before it, newest first (docs/periods.md)."""

    account_id: str
    type: str
    period: str  # "day" or "month"
    periods: list[PeriodTotal]
    anchor: str | None = None


@dataclass(frozen=True)
class TypedResourcePage:
    """One page of a type's resources; `next_cursor` is None on the last."""

    items: list[TypedResource]
    next_cursor: str | None


class Undecodable(ValueError):
    """An answer's body or headers do not hold what the model says."""


def _value(expected: Any, value: Any, where: str) -> Any:
    origin, arguments = typing.get_origin(expected), typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        for choice in arguments:
            try:
                return _value(choice, value, where)
            except Undecodable:
                continue
        raise Undecodable(f"{where}: {value!r} is none of {expected}")
    if expected is type(None):
        if value is None:
            return None
    elif origin is list:
        if isinstance(value, list):
            return [_value(arguments[0], item, f"{where}[{index}]") for index, item in enumerate(value)]
    elif origin is dict:
        if isinstance(value, dict):
            return value
    elif dataclasses.is_dataclass(expected):
        return decode(typing.cast(type[Any], expected), value, where=where)
    elif expected is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(value, expected):
        return value
    raise Undecodable(f"{where}: {value!r} is not {getattr(expected, '__name__', expected)}")


def decode(model: type[M], body: Any, headers: Mapping[str, str] | None = None, *, where: str = "body") -> M:
    """`model` from a JSON body (and its header fields from `headers`, matched case-insensitively)."""
    if not isinstance(body, dict):
        raise Undecodable(f"{where}: {body!r} is not an object")
    lowered = {name.lower(): value for name, value in (headers or {}).items()}
    values: dict[str, Any] = {}
    hints = typing.get_type_hints(model)
    for each in dataclasses.fields(typing.cast(Any, model)):
        header: str | None = each.metadata.get("header")
        found: Any
        if header is not None:
            found, place = lowered.get(header.lower(), dataclasses.MISSING), f"header {header}"
        else:
            found, place = body.get(json_name(each.name), dataclasses.MISSING), f"{where}.{json_name(each.name)}"
        if found is dataclasses.MISSING and each.default is not dataclasses.MISSING:
            continue  # a property the API leaves out when it has nothing to say: the field's default
        if found is dataclasses.MISSING:
            raise Undecodable(f"{place}: missing")
        values[each.name] = _value(hints[each.name], found, place)
    return model(**values)
