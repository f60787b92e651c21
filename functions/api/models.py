"""Typed request and response bodies: the API validates with them and the OpenAPI document is
generated from them (docs/openapi.json)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictStr

from functions.core.model import Resource, Usage

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


class PutAccountRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: WholeNumber = Field(ge=0, le=MAX_LIMIT, description="Most resources the account may hold.")


class CreateResourceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr = Field(min_length=1, max_length=MAX_NAME_LENGTH)
    attributes: dict[str, Any] = Field(default_factory=dict, description="Any JSON object.")


class AccountView(BaseModel):
    accountId: str
    limit: int
    bestEffort: int = Field(description="Immediate count; may undercount, never overcounts.")
    eventual: int = Field(description="Exact count of processed resources; lags the stream.")
    used: int = Field(
        description="max(bestEffort, eventual). The limit itself is enforced on the slots held by live "
        "resources and writes in flight, so a create may still find a slot while used shows the limit."
    )
    available: int

    @classmethod
    def of(cls, usage: Usage) -> AccountView:
        return cls(
            accountId=usage.account_id,
            limit=usage.limit,
            bestEffort=usage.best_effort,
            eventual=usage.eventual,
            used=usage.used,
            available=usage.available,
        )


class ResourceView(BaseModel):
    accountId: str
    resourceId: str
    name: str
    attributes: dict[str, Any]
    createdAt: str

    @classmethod
    def of(cls, resource: Resource) -> ResourceView:
        return cls(
            accountId=resource.account_id,
            resourceId=resource.resource_id,
            name=resource.name,
            attributes=resource.attributes,
            createdAt=resource.created_at,
        )


class ResourcePage(BaseModel):
    items: list[ResourceView]
    nextCursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")


class ErrorDetail(BaseModel):
    code: str
    message: str
    requestId: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail
