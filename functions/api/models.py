"""Typed request and response bodies: the API validates with them and the OpenAPI document is
generated from them (docs/openapi.json)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    model_validator,
)

from functions.api.json_body import LARGEST_DOUBLE, MAX_INTEGER_DIGITS, SMALLEST_DOUBLE
from functions.core.history import History
from functions.core.model import (
    DEFAULT_RESOURCE_TYPE,
    MAX_AMOUNT,
    MAX_REQUESTS_PER_SECOND,
    MAX_RESOURCE_TYPES,
    MAX_WINDOW_SECONDS,
    RESOURCE_TYPE_PATTERN,
    Resource,
    TenantRate,
    Usage,
)
from functions.core.periods import Period, format_instant, parse_period
from functions.core.plans import AccountEntry, Plan, PlanQuota
from functions.core.rollout import Progress
from functions.core.thresholds import MAX_THRESHOLDS

# A limit is in units, as an amount is (a token budget counts past a million): every JSON client
# reads a number up to 2^53 - 1 exactly.
MAX_LIMIT = MAX_AMOUNT
MAX_NAME_LENGTH = 256


def _whole_number(value: Any) -> Any:
    """A JSON integer, as JSON Schema counts them: 5 and 5.0, not 5.5, "5" or true."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("must be a whole number")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("must be a whole number")
        return int(value)
    return value


WholeNumber = Annotated[int, BeforeValidator(_whole_number)]


def _each_once_ascending(thresholds: list[int]) -> list[int]:
    if len(set(thresholds)) != len(thresholds):
        raise ValueError("each threshold at most once")
    return sorted(thresholds)


def _not_null(value: Any) -> Any:
    """Omitted, a quota keeps its thresholds; null would say nothing more, so it is refused."""
    if value is None:
        raise ValueError("must be a list of percentages (omit it to keep the quota's thresholds)")
    return value


def _without_null(schema: dict[str, Any]) -> None:
    """The field's schema without its `null` branch: the body may leave it out, never send null."""
    schema.update(next(branch for branch in schema.pop("anyOf") if branch.get("type") != "null"))


# A percentage of the limit: 0 would be crossed by no usage (every usage is at or above it), and
# usage never rises past 100% by creates (only a lowered limit puts it there). At most
# MAX_THRESHOLDS, so a decision's transaction holds an outbox item for each (docs/events.md).
Thresholds = Annotated[
    Annotated[
        list[Annotated[int, Field(ge=1, le=100), BeforeValidator(_whole_number)]],
        Field(min_length=1, max_length=MAX_THRESHOLDS, json_schema_extra={"uniqueItems": True}),
        AfterValidator(_each_once_ascending),
    ]
    | None,
    BeforeValidator(_not_null),
    Field(
        description="The quota's own usage thresholds: 1 to 10 percentages of its limit (whole numbers 1 to "
        "100), each once, in any order (kept ascending). A Usage Threshold Crossed event is put each time "
        "the quota's usage crosses one (docs/events.md). Omitted, the quota keeps the ones it has (80 and "
        "100 if it never had its own); `[80, 100]` gives it the defaults again.",
        json_schema_extra=_without_null,
    ),
]


class RateLimit(BaseModel):
    """A tenant's rate limit (docs/security.md): requestsPerSecond on average, counted over windows
    of burstSeconds, so up to requestsPerSecond * burstSeconds requests may come at once."""

    model_config = ConfigDict(extra="forbid")

    requestsPerSecond: WholeNumber = Field(ge=1, le=MAX_REQUESTS_PER_SECOND)
    burstSeconds: WholeNumber = Field(
        ge=1, le=MAX_WINDOW_SECONDS, description="The window: how many seconds' worth of requests may come at once."
    )

    def as_rate(self) -> TenantRate:
        return TenantRate(requests_per_second=self.requestsPerSecond, window_seconds=self.burstSeconds)

    @classmethod
    def of(cls, rate: TenantRate) -> RateLimit:
        return cls(requestsPerSecond=rate.requests_per_second, burstSeconds=rate.window_seconds)


def _not_null_period(value: Any) -> Any:
    """Omitted, a quota keeps its period (or stays a holding); null would say nothing more."""
    if value is None:
        raise ValueError("must be 'day' or 'month' (omit it to keep the quota's period)")
    return value


def _not_null_anchor(value: Any) -> Any:
    if value is None:
        raise ValueError("must be an RFC 3339 timestamp (omit it for UTC calendar boundaries)")
    return value


PeriodField = Annotated[
    Literal["day", "month"] | None,
    BeforeValidator(_not_null_period),
    Field(
        description="Makes the quota periodic: its usage is what its resources (usage records) took since "
        "the current period began, and starts at 0 at each period's end with no write (docs/periods.md). "
        "`day` or `month`, on UTC calendar boundaries unless `anchor` says otherwise. Omitted, the quota "
        "keeps its period, or stays a holding quota (usage is what exists). A holding quota becomes "
        "periodic only while it holds nothing, and a periodic quota keeps its period (409 "
        "PeriodChangeRefused).",
        json_schema_extra=_without_null,
    ),
]
# An RFC 3339 timestamp of whole seconds in the years 2000 to 2999, as far as a pattern says it (a
# day or an hour out of range is refused by the parser, functions/core/periods.py).
ANCHOR_PATTERN = r"^2[0-9]{3}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}([Zz]|[+-][0-9]{2}:[0-9]{2})$"
AnchorField = Annotated[
    str | None,
    BeforeValidator(_not_null_anchor),
    Field(
        description="A period start (RFC 3339, whole seconds, years 2000 to 2999, e.g. "
        "`2026-01-15T00:00:00Z`): days start at its time of day, months on its day of the month (the "
        "last day of a month without it) at its time of day. Only with `period`.",
        pattern=ANCHOR_PATTERN,
        json_schema_extra=_without_null,
    ),
]


class PeriodAsked(BaseModel):
    """A PUT's period, checked as the core reads it (a 400 names what is wrong)."""

    period: PeriodField = None
    anchor: AnchorField = None

    @model_validator(mode="after")
    def _valid_period(self) -> Self:
        if self.anchor is not None and self.period is None:
            raise ValueError("anchor is only taken with a period")
        self.as_period()  # raises ValueError with the reason
        return self

    def as_period(self) -> Period | None:
        return None if self.period is None else parse_period(self.period, self.anchor)


def _not_null_limit(value: Any) -> Any:
    if value is None:
        raise ValueError("must be a whole number (omit it only to put the account on a plan)")
    return value


def _not_null_plan(value: Any) -> Any:
    if value is None:
        raise ValueError("must be a plan's name (omit it to set the account's own limit)")
    return value


def _not_null_mode(value: Any) -> Any:
    if value is None:
        raise ValueError("must be `enforce` or `shadow` (omit it to keep the quota's mode)")
    return value


MODE_ASKED = (
    'The quota\'s mode (docs/plans.md, "Shadow mode"): `enforce` refuses a create past the limit with 409 '
    "LimitExceeded; `shadow` admits it, counts it as any other, and announces the refusal enforcement would have "
    "made (a Limit Refused event with `shadow`, the metric ShadowRefusals). Omitted, the quota keeps its mode "
    "(`enforce` for a new one). Not for a periodic quota (400)."
)
ModeField = Annotated[
    Literal["enforce", "shadow"] | None,
    BeforeValidator(_not_null_mode),
    Field(description=MODE_ASKED, json_schema_extra=_without_null),
]
ModeValue = Literal["enforce", "shadow"]
MODE_READ = (
    'The quota\'s mode (docs/plans.md, "Shadow mode"): `enforce` (every quota before shadow mode) refuses a create '
    "past the limit; `shadow` admits it, and `used` may then exceed `limit` (`available` is 0)."
)


def _no_periodic_shadow(mode: str | None, period: str | None) -> None:
    if mode == "shadow" and period is not None:
        raise ValueError("a periodic quota cannot be in shadow mode")


class PutAccountRequest(PeriodAsked):
    """Either the account's own limit (`limit`, with `rateLimit`, `thresholds`, `period` as they
    are), or a plan (`plan` alone): the document says so too, so a body it takes is one the API takes."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {"required": ["limit"], "not": {"required": ["plan"]}},
                {"required": ["plan"], "maxProperties": 1},
            ]
        },
    )

    limit: Annotated[
        Annotated[int, Field(ge=0, le=MAX_LIMIT), BeforeValidator(_whole_number)] | None,
        BeforeValidator(_not_null_limit),
        Field(
            description="Most units the account's resources may hold together (each holds its amount, 1 by "
            "default): 0 to 2^53 - 1. Required unless `plan` is given.",
            json_schema_extra=_without_null,
        ),
    ] = None
    rateLimit: RateLimit | None = Field(
        default=None, description="The account's own rate limit; omitted, the account keeps the one it has."
    )
    thresholds: Thresholds = None
    mode: ModeField = None
    plan: Annotated[
        Annotated[StrictStr, Field(pattern=RESOURCE_TYPE_PATTERN)] | None,
        BeforeValidator(_not_null_plan),
        Field(
            description="Puts the account on this plan (docs/plans.md): each of the plan's quotas is set on the "
            "account's type of that name, but the account's overrides, and a type another plan gave it that this "
            "one lacks keeps its limit as the account's own. Alone: not with `limit`, `rateLimit`, `thresholds`, "
            "`period` or `anchor` (400). 404 PlanNotFound, nothing written, for a plan that does not exist.",
            json_schema_extra=_without_null,
        ),
    ] = None

    @model_validator(mode="after")
    def _limit_or_plan(self) -> Self:
        if self.plan is None and self.limit is None:
            raise ValueError("give `limit` (the account's own limit) or `plan`")
        if self.plan is not None and (
            self.limit is not None
            or self.rateLimit
            or self.thresholds is not None
            or self.period
            or self.anchor
            or self.mode is not None
        ):
            raise ValueError("`plan` comes alone: the plan's quotas are the account's limits")
        _no_periodic_shadow(self.mode, self.period)
        return self


def _not_null_expiry(value: Any) -> Any:
    if value is None:
        raise ValueError("must be an RFC 3339 UTC timestamp (omit it for an override that does not expire)")
    return value


# An RFC 3339 UTC timestamp of whole seconds in the years 2000 to 2999, as far as a pattern says it.
EXPIRES_AT_PATTERN = r"^2[0-9]{3}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}[Zz]$"
EXPIRES_AT = (
    'An expiring grant (docs/plans.md, "Expiring grants"): the override ends at this time (RFC 3339, UTC, '
    "whole seconds, e.g. `2026-12-31T00:00:00Z`) and the type returns to its plan's limit by itself, within one "
    "sweep (5 minutes) of it; no create received at or after it is admitted by the override. Only on a type whose "
    "limit comes from the account's plan or overrides it, not a periodic one; in the future and at most 366 days "
    "ahead (400 ValidationError, nothing written, otherwise). Omitted, the override does not expire."
)


class QuotaRequest(PeriodAsked):
    """A type's quota as a type's PUT and a plan's quotas take it."""

    model_config = ConfigDict(extra="forbid")

    limit: WholeNumber = Field(
        ge=0,
        le=MAX_LIMIT,
        description="Most units the account's resources of this type may hold together: 0 to 2^53 - 1.",
    )
    thresholds: Thresholds = None
    mode: ModeField = None

    @model_validator(mode="after")
    def _holding_shadow(self) -> Self:
        _no_periodic_shadow(self.mode, self.period)
        return self


class PutTypeRequest(QuotaRequest):
    """A type's PUT: its quota, and for an override an end (a plan's quotas never end)."""

    expiresAt: Annotated[
        Annotated[StrictStr, Field(pattern=EXPIRES_AT_PATTERN)] | None,
        BeforeValidator(_not_null_expiry),
        Field(description=EXPIRES_AT, json_schema_extra=_without_null),
    ] = None

    @model_validator(mode="after")
    def _valid_expiry(self) -> Self:
        self.expires_at_ms()  # raises ValueError for a day or an hour out of range
        return self

    def expires_at_ms(self) -> int | None:
        """When the grant ends, epoch ms; None: the override does not expire."""
        if self.expiresAt is None:
            return None
        try:
            moment = datetime.fromisoformat(self.expiresAt.upper().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"expiresAt is not a time: {self.expiresAt!r:.40}") from None
        return int(moment.timestamp()) * 1000


PlanTypeName = Annotated[str, Field(pattern=RESOURCE_TYPE_PATTERN)]


class PutPlanRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    quotas: dict[PlanTypeName, QuotaRequest] = Field(
        max_length=MAX_RESOURCE_TYPES,
        description=f"The plan's quotas by resource type name (up to {MAX_RESOURCE_TYPES}), each as a type's PUT "
        f"takes it: its limit, and its thresholds and period if the plan gives them (omitted, an account's type "
        f"keeps what it has). Named types only: `{DEFAULT_RESOURCE_TYPE}`, an account's type of the routes "
        f"without one, is never a plan's (400).",
        # Only type names as keys (patternProperties alone lets any other key through), `default` not one.
        json_schema_extra={"additionalProperties": False, "propertyNames": {"not": {"enum": [DEFAULT_RESOURCE_TYPE]}}},
    )

    @model_validator(mode="after")
    def _named_types_only(self) -> Self:
        if DEFAULT_RESOURCE_TYPE in self.quotas:
            raise ValueError(f"`{DEFAULT_RESOURCE_TYPE}` is the account's own type, never a plan's")
        return self


ATTRIBUTE_VALUE_REF = "#/components/schemas/AttributeValue"
# What functions/api/json_body.py takes as an attribute's value, as JSON Schema says it (the
# document's components, scripts/openapi.py): integers of at most 38 digits, other numbers within
# DynamoDB's range, the largest being the largest double whose shortest text is within it. Not
# said: the nesting bound, lone surrogates, a name twice (in words in `attributes`' description).
ATTRIBUTE_VALUE: dict[str, Any] = {
    "description": "An attribute's value: any JSON value within the API's JSON rules.",
    "anyOf": [
        {"type": ["null", "boolean", "string"]},
        {"type": "integer", "minimum": -(10**MAX_INTEGER_DIGITS - 1), "maximum": 10**MAX_INTEGER_DIGITS - 1},
        {
            "type": "number",
            "minimum": -LARGEST_DOUBLE,
            "maximum": LARGEST_DOUBLE,
            "not": {
                "anyOf": [
                    {"type": "integer"},
                    {"exclusiveMinimum": -SMALLEST_DOUBLE, "exclusiveMaximum": SMALLEST_DOUBLE},
                ]
            },
        },
        {"type": "array", "items": {"$ref": ATTRIBUTE_VALUE_REF}},
        {"type": "object", "additionalProperties": {"$ref": ATTRIBUTE_VALUE_REF}},
    ],
}


class CreateResourceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr = Field(min_length=1, max_length=MAX_NAME_LENGTH)
    attributes: dict[str, Any] = Field(
        default_factory=dict,
        description="Any JSON object within the API's JSON rules (docs/api.md, 'Request bodies'), else a 400 "
        "ValidationError: integers of at most 38 digits; other numbers 0 or 1E-130 to "
        "9.9999999999999999999999999999999999999E+125 in magnitude, held exactly by a 64-bit double; "
        "at most 32 levels of objects and arrays in the body (this object is level 2); no lone UTF-16 "
        "surrogate; no name twice in an object.",
        json_schema_extra={"additionalProperties": {"$ref": ATTRIBUTE_VALUE_REF}},
    )
    amount: WholeNumber = Field(
        default=1,
        ge=1,
        le=MAX_AMOUNT,
        description="The units of the quota the resource holds (vCPUs, GB, tickets): an integer from 1 to "
        "2^53 - 1 (5.0 is 5, as JSON Schema counts integers), default 1. The quota's limit, bestEffort, "
        "eventual, used and available are in units.",
    )


class ResizeResourceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    amount: WholeNumber = Field(
        ge=1,
        le=MAX_AMOUNT,
        description="The units the resource holds from now on: an integer from 1 to 2^53 - 1. More than it "
        "holds is admitted as a create of the difference would be (409 LimitExceeded, the resource unchanged, "
        "when fewer units are free); fewer frees the difference at once.",
    )


class AdmissionView(BaseModel):
    amount: int = Field(description="The units asked about.")
    admitted: bool = Field(
        description="Whether a create of that many units would be admitted now: always true for a quota in shadow "
        "mode, which admits past its limit (`free` says what enforcement would leave)."
    )
    free: int = Field(description="The units a create could take now (0 or more).")


class TypeDeletionView(BaseModel):
    accountId: str
    resourceType: str
    removed: bool = Field(
        description="true: the type is gone (its limit, counters, records and events, and its name from the "
        "account). false: its resources are deleted (each counted as a delete) and its limit is 0, so every create "
        "of it is refused; the stream has yet to count the deletes: the same DELETE again removes the type once it "
        'has (docs/api.md, "Delete a type").'
    )


class AccountDeletionView(BaseModel):
    accountId: str
    requestedAt: str = Field(
        description="When the deletion was first asked (ISO 8601, UTC): a repeated DELETE answers the same deletion."
    )


class QuotaAnswer(BaseModel):
    """An answer whose optional fields are left out when absent (never null), so a quota without
    them answers byte for byte what a client that knows none of them reads."""

    def answer(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


OWN_THRESHOLDS = (
    "The quota's own usage thresholds (percentages of its limit, ascending), set by its PUT; absent when it has "
    "none of its own (never null): then 80 and 100."
)


class PeriodView(QuotaAnswer):
    """A periodic quota's period and the one its counts are of; every field absent for a holding."""

    period: Literal["day", "month"] | None = Field(
        default=None, description="Set for a periodic quota: its counts are its current period's."
    )
    anchor: str | None = Field(default=None, description="The period's anchor, if it has one.")
    periodStart: str | None = Field(default=None, description="When the current period began (RFC 3339, UTC).")
    periodEnd: str | None = Field(
        default=None, description="When it ends, and the next begins at 0 (RFC 3339, UTC; exclusive)."
    )

    @staticmethod
    def fields_of(usage: Usage) -> dict[str, Any]:
        if usage.period is None or usage.window is None:
            return {}
        anchor = None if usage.period.anchor is None else format_instant(usage.period.anchor)
        return {
            "period": usage.period.kind.value,
            "anchor": anchor,
            "periodStart": format_instant(usage.window.start),
            "periodEnd": format_instant(usage.window.end),
        }


LIMIT_SOURCE = (
    "Where the limit comes from (docs/plans.md): `account`, set by the quota's own PUT on an account "
    "without a plan giving it; `plan`, the account's plan's; `override`, the quota's own PUT on an account whose "
    "plan gives it (`DELETE .../override` gives it the plan's again)."
)
LimitSourceValue = Literal["account", "plan", "override"]


class TypeView(PeriodView):
    """One of an account's limits: its resource type's limit and counters (the rate limit is the
    account's, in AccountView)."""

    accountId: str
    type: str
    limit: int
    limitSource: LimitSourceValue = Field(default="account", description=LIMIT_SOURCE)
    mode: ModeValue = Field(default="enforce", description=MODE_READ)
    bestEffort: int = Field(description="Immediate count; may undercount, never overcounts.")
    eventual: int = Field(description="Exact count of processed resources; lags the stream.")
    used: int = Field(description="max(bestEffort, eventual), as in AccountView.")
    available: int
    thresholds: list[int] | None = Field(default=None, description=OWN_THRESHOLDS)
    expiresAt: str | None = Field(
        default=None,
        description="Set for an expiring grant (an override with `expiresAt`, docs/plans.md): when it ends (RFC "
        "3339, UTC); creates from then on are admitted by the plan's limit, and the type returns to it within one "
        "sweep. Absent for any other limit (never null).",
    )

    @classmethod
    def of(cls, usage: Usage) -> TypeView:
        return cls(
            accountId=usage.account_id,
            type=usage.quota.resource_type,
            limit=usage.limit,
            limitSource=_source(usage),
            mode=_mode(usage.mode),
            bestEffort=usage.best_effort,
            eventual=usage.eventual,
            used=usage.used,
            available=usage.available,
            thresholds=_listed(usage.thresholds),
            expiresAt=None if usage.grant_ends is None else format_instant(_instant(usage.grant_ends)),
            **PeriodView.fields_of(usage),
        )


def _instant(epoch_ms: int) -> datetime:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC)


def _source(usage: Usage) -> LimitSourceValue:
    source = usage.limit_source
    return "plan" if source == "plan" else "override" if source == "override" else "account"


def _mode(mode: str) -> ModeValue:
    return "shadow" if mode == "shadow" else "enforce"


def _listed(thresholds: tuple[int, ...] | None) -> list[int] | None:
    return None if thresholds is None else list(thresholds)


class TypeList(QuotaAnswer):
    items: list[TypeView] = Field(description="Every type of the account, the default type first, then by name.")


class AccountView(PeriodView):
    """The account's default type (the routes without a type), its rate limit, and its other types."""

    accountId: str
    limit: int
    limitSource: LimitSourceValue = Field(default="account", description=LIMIT_SOURCE)
    mode: ModeValue = Field(default="enforce", description=MODE_READ)
    plan: str | None = Field(
        default=None, description="The account's plan (docs/plans.md); absent when it is on none (never null)."
    )
    bestEffort: int = Field(description="Immediate count; may undercount, never overcounts.")
    eventual: int = Field(description="Exact count of processed resources; lags the stream.")
    used: int = Field(
        description="max(bestEffort, eventual). The limit itself is enforced on the slots held by live "
        "resources and writes in flight, so a create may still find a slot while used shows the limit."
    )
    available: int
    rateLimit: RateLimit = Field(description="The account's rate limit: its own, or the API's default.")
    thresholds: list[int] | None = Field(default=None, description=OWN_THRESHOLDS)
    types: list[TypeView] | None = Field(
        default=None,
        description="The account's other resource types, by name; absent when it has none (never null).",
    )

    @classmethod
    def of(cls, usage: Usage, default_rate: TenantRate, types: Sequence[Usage] = ()) -> AccountView:
        return cls(
            accountId=usage.account_id,
            limit=usage.limit,
            limitSource=_source(usage),
            mode=_mode(usage.mode),
            plan=usage.plan,
            bestEffort=usage.best_effort,
            eventual=usage.eventual,
            used=usage.used,
            available=usage.available,
            rateLimit=RateLimit.of(usage.rate or default_rate),
            thresholds=_listed(usage.thresholds),
            types=[TypeView.of(other) for other in types] or None,
            **PeriodView.fields_of(usage),
        )


class PlanQuotaView(QuotaAnswer):
    """One type's quota in a plan, as its PUT gave it (thresholds, period and anchor absent when not given)."""

    limit: int
    thresholds: list[int] | None = Field(
        default=None, description="The thresholds the plan gives; absent: an account's type keeps its own."
    )
    period: Literal["day", "month"] | None = Field(default=None, description="The period the plan gives, if any.")
    anchor: str | None = Field(default=None, description="Its anchor, if it has one.")
    mode: Literal["shadow"] | None = Field(
        default=None,
        description='`shadow` for a quota the plan gives in shadow mode (docs/plans.md, "Shadow mode"); absent: '
        "`enforce`, which its accounts' types are given.",
    )

    @classmethod
    def of(cls, quota: PlanQuota) -> PlanQuotaView:
        period = quota.period
        return cls(
            limit=quota.limit,
            thresholds=_listed(quota.thresholds),
            period=None if period is None else period.kind.value,
            anchor=None if period is None or period.anchor is None else format_instant(period.anchor),
            mode="shadow" if quota.mode == "shadow" else None,
        )


class RolloutView(BaseModel):
    """How far a plan's current version has reached its accounts (docs/plans.md)."""

    version: int = Field(description="The plan's current version.")
    accounts: int = Field(description="The accounts on the plan, as the account registry lists them.")
    updated: int = Field(description="Those given the current version: equal to `accounts` once the rollout is done.")


class PlanView(QuotaAnswer):
    """A plan at its current version (its ETag)."""

    plan: str
    version: int = Field(description="Bumped by each PUT that changes its quotas: the ETag's version.")
    quotas: dict[str, PlanQuotaView] = Field(description="Its quotas by resource type name.")
    rollout: RolloutView | None = Field(
        default=None,
        description="The plan's GET only: how many of its accounts have its current version, counted from the "
        "account registry (an eventually consistent index) when asked.",
    )

    @classmethod
    def of(cls, plan: Plan, progress: Progress | None = None) -> PlanView:
        quotas = {name: PlanQuotaView.of(quota) for name, quota in sorted(plan.quotas.items())}
        rollout = None
        if progress is not None:
            rollout = RolloutView(version=progress.version, accounts=progress.accounts, updated=progress.updated)
        return cls(plan=plan.name, version=plan.version, quotas=quotas, rollout=rollout)

    def answer(self) -> dict[str, Any]:
        answered = {
            **self.model_dump(exclude={"quotas", "rollout"}),
            "quotas": {n: q.answer() for n, q in self.quotas.items()},
        }
        if self.rollout is not None:
            answered["rollout"] = self.rollout.model_dump()
        return answered


class PlanPageView(QuotaAnswer):
    items: list[PlanView] = Field(description="Plans in name order.")
    nextCursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")

    def answer(self) -> dict[str, Any]:
        return {"items": [item.answer() for item in self.items], "nextCursor": self.nextCursor}


class AccountEntryView(BaseModel):
    """An account as the registry lists it."""

    accountId: str
    plan: str | None = Field(default=None, description="The account's plan; absent when it is on none.")
    planVersion: int | None = Field(
        default=None, description="The plan's version the account was given in full; absent when it is on none."
    )

    @classmethod
    def of(cls, entry: AccountEntry) -> AccountEntryView:
        if entry.plan is None:
            return cls(accountId=entry.account_id)
        return cls(accountId=entry.account_id, plan=entry.plan, planVersion=entry.plan_version)


class AccountPageView(QuotaAnswer):
    items: list[AccountEntryView] = Field(
        description="Accounts by id: a plan's, or (no `plan`) those on no plan first, then each plan's by plan name."
    )
    nextCursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last. A page may hold fewer than `limit` "
        "accounts and still have one."
    )

    def answer(self) -> dict[str, Any]:
        return {"items": [item.model_dump(exclude_none=True) for item in self.items], "nextCursor": self.nextCursor}


class PeriodTotalView(BaseModel):
    """One period of a periodic quota's history."""

    periodStart: str = Field(description="When the period began (RFC 3339, UTC).")
    periodEnd: str = Field(description="When it ended, or ends (RFC 3339, UTC; exclusive).")
    limit: int = Field(
        description="The period's limit: as it stood when the period ended (a limit change applies to the "
        "current period at once), or the quota's current limit for a period nobody created in."
    )
    bestEffort: int = Field(description="Immediate count; may undercount, never overcounts.")
    eventual: int = Field(description="Exact count of the period's counted usage records (a late one included).")
    used: int = Field(description="max(bestEffort, eventual), as the quota's GET says it.")
    settled: bool = Field(
        description="Final: the period ended at least a minute ago and nothing of it is pending (no create, "
        "resize or refund in flight, every record counted), so `eventual` is its exact total and never moves "
        "again. Bill from a settled period's `eventual`."
    )


class PeriodHistoryView(QuotaAnswer):
    """A periodic quota's current period and the ones before it, newest first."""

    accountId: str
    type: str = Field(description="The quota's resource type (`default` on the routes without a type).")
    period: Literal["day", "month"]
    anchor: str | None = Field(default=None, description="The period's anchor, if it has one; absent otherwise.")
    periods: list[PeriodTotalView] = Field(description="The current period first, then each one before it.")

    @classmethod
    def of(cls, history: History) -> PeriodHistoryView:
        anchor = history.period.anchor
        return cls(
            accountId=history.quota.account_id,
            type=history.quota.resource_type,
            period=history.period.kind.value,
            anchor=None if anchor is None else format_instant(anchor),
            periods=[
                PeriodTotalView(
                    periodStart=format_instant(total.window.start),
                    periodEnd=format_instant(total.window.end),
                    limit=total.limit,
                    bestEffort=total.best_effort,
                    eventual=total.eventual,
                    used=total.used,
                    settled=total.settled,
                )
                for total in history.totals
            ],
        )


class ResourceView(BaseModel):
    accountId: str
    resourceId: str
    name: str
    attributes: dict[str, Any]
    createdAt: str
    amount: int = Field(
        default=1,
        exclude_if=lambda amount: amount == 1,
        description="The units of the quota the resource holds; absent when 1 (the default), so a resource "
        "created without an amount answers as before amounts.",
        ge=1,
        le=MAX_AMOUNT,
    )

    @classmethod
    def of(cls, resource: Resource) -> Self:
        return cls(
            accountId=resource.account_id,
            resourceId=resource.resource_id,
            name=resource.name,
            attributes=resource.attributes,
            createdAt=resource.created_at,
            amount=resource.amount,
        )


class TypedResourceView(ResourceView):
    """A resource, on its type's routes: the same fields and its type."""

    type: str

    @classmethod
    def of(cls, resource: Resource) -> Self:
        return cls(**ResourceView.of(resource).model_dump(), type=resource.quota.resource_type)


class ResourcePage(BaseModel):
    items: list[ResourceView]
    nextCursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class TypedResourcePage(BaseModel):
    items: list[TypedResourceView]
    nextCursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class ErrorDetail(BaseModel):
    code: str
    message: str
    requestId: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail
