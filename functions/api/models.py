"""Typed request and response bodies: the API validates with them and the OpenAPI document is
generated from them (docs/openapi.json)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictStr

from functions.core.model import Resource, Usage
from functions.core.rate_limits import MAX_REQUESTS_PER_SECOND, MAX_WINDOW_SECONDS, TenantRate

MAX_LIMIT = 1_000_000
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


class PutAccountRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: WholeNumber = Field(ge=0, le=MAX_LIMIT, description="Most resources the account may hold.")
    rateLimit: RateLimit | None = Field(
        default=None, description="The account's own rate limit; omitted, the account keeps the one it has."
    )


class PutTypeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: WholeNumber = Field(ge=0, le=MAX_LIMIT, description="Most resources of this type the account may hold.")


class CreateResourceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr = Field(min_length=1, max_length=MAX_NAME_LENGTH)
    attributes: dict[str, Any] = Field(
        default_factory=dict,
        description="Any JSON object within the API's JSON rules (README, 'Call the API'), else a 400 "
        "ValidationError: integers of at most 38 digits; other numbers 0 or 1E-130 to "
        "9.9999999999999999999999999999999999999E+125 in magnitude, held exactly by a 64-bit double; "
        "at most 32 levels of objects and arrays in the body (this object is level 2); no lone UTF-16 "
        "surrogate; no name twice in an object.",
    )


class TypeView(BaseModel):
    """One of an account's limits: its resource type's limit and counters (the rate limit is the
    account's, in AccountView)."""

    accountId: str
    type: str
    limit: int
    bestEffort: int = Field(description="Immediate count; may undercount, never overcounts.")
    eventual: int = Field(description="Exact count of processed resources; lags the stream.")
    used: int = Field(description="max(bestEffort, eventual), as in AccountView.")
    available: int

    @classmethod
    def of(cls, usage: Usage) -> TypeView:
        return cls(
            accountId=usage.account_id,
            type=usage.quota.resource_type,
            limit=usage.limit,
            bestEffort=usage.best_effort,
            eventual=usage.eventual,
            used=usage.used,
            available=usage.available,
        )


class TypeList(BaseModel):
    items: list[TypeView] = Field(description="Every type of the account, the default type first, then by name.")


class AccountView(BaseModel):
    """The account's default type (the routes without a type), its rate limit, and its other types."""

    accountId: str
    limit: int
    bestEffort: int = Field(description="Immediate count; may undercount, never overcounts.")
    eventual: int = Field(description="Exact count of processed resources; lags the stream.")
    used: int = Field(
        description="max(bestEffort, eventual). The limit itself is enforced on the slots held by live "
        "resources and writes in flight, so a create may still find a slot while used shows the limit."
    )
    available: int
    rateLimit: RateLimit = Field(description="The account's rate limit: its own, or the API's default.")
    types: list[TypeView] | None = Field(
        default=None,
        description="The account's other resource types, by name; absent when it has none (never null).",
    )

    @classmethod
    def of(cls, usage: Usage, default_rate: TenantRate, types: Sequence[Usage] = ()) -> AccountView:
        return cls(
            accountId=usage.account_id,
            limit=usage.limit,
            bestEffort=usage.best_effort,
            eventual=usage.eventual,
            used=usage.used,
            available=usage.available,
            rateLimit=RateLimit.of(usage.rate or default_rate),
            types=[TypeView.of(other) for other in types] or None,
        )

    def answer(self) -> dict[str, Any]:
        """The body: without `types` when the account has none, as before types."""
        return self.model_dump(exclude={"types"} if self.types is None else set())


class ResourceView(BaseModel):
    accountId: str
    resourceId: str
    name: str
    attributes: dict[str, Any]
    createdAt: str

    @classmethod
    def of(cls, resource: Resource) -> Self:
        return cls(
            accountId=resource.account_id,
            resourceId=resource.resource_id,
            name=resource.name,
            attributes=resource.attributes,
            createdAt=resource.created_at,
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
