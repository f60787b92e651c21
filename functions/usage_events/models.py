"""The usage events' contract: what the stack puts on its EventBridge bus, one model per event type.

The publisher puts each event with `source` SOURCE, `detail-type` the model's DETAIL_TYPE and
`detail` the model's JSON; docs/events.schema.json is generated from these models
(scripts/event_schemas.py) and docs/events.md shows an example of each.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from functions.core.periods import start_of
from functions.core.thresholds import Crossing

SOURCE = "hybrid-counter.usage"


class UsageThresholdCrossed(BaseModel):
    """A quota's exact usage crossed a threshold, a percentage of its limit: up when it went from
    below ceil(limit * threshold / 100) to at or above it, down the other way."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    DETAIL_TYPE: ClassVar[str] = "Usage Threshold Crossed"

    eventId: str = Field(
        description="Stable: every copy of this crossing carries it (delivery is at least once), and no other "
        "crossing does. Deduplicate on it."
    )
    accountId: str
    resourceType: str = Field(description="The type the limit is of (`default` for the account's one limit).")
    threshold: int = Field(ge=1, description="The percentage of the limit crossed.")
    direction: Literal["up", "down"]
    usage: int = Field(ge=0, description="The exact (eventual) usage just after the crossing.")
    limit: int = Field(ge=0, description="The limit the threshold is a percentage of.")
    crossedAt: str = Field(description="When the crossing was counted: ISO 8601, UTC.")
    seq: int = Field(
        ge=1,
        description="This quota's event number: 1, 2, 3... without gaps (a periodic quota's, in each period). "
        "Order a quota's events by it; a gap means an event not received yet.",
    )
    periodStart: str | None = Field(
        default=None,
        description="A periodic quota's: the start of the period whose usage crossed (RFC 3339, UTC); each "
        "period starts below every threshold, and its crossings are its own. Absent for a holding quota.",
    )

    @classmethod
    def of(cls, crossing: Crossing, crossed_at: str) -> UsageThresholdCrossed:
        return cls(
            eventId=crossing.event_id,
            accountId=crossing.quota.account_id,
            resourceType=crossing.quota.resource_type,
            threshold=crossing.threshold,
            direction=crossing.direction.value,
            usage=crossing.usage,
            limit=crossing.limit,
            crossedAt=crossed_at,
            seq=crossing.seq,
            periodStart=start_of(crossing.quota.period) if crossing.quota.period else None,
        )


class LimitChanged(BaseModel):
    """An admin's PUT changed a quota's limit, its usage thresholds, or both. The crossings the
    change makes (usage 9 of 10, limit lowered to 8: 100% up) follow as Usage Threshold Crossed
    events, decided from the exact usage."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    DETAIL_TYPE: ClassVar[str] = "Limit Changed"

    eventId: str = Field(description="Stable: every copy of this change carries it, and no other change does.")
    accountId: str
    resourceType: str = Field(description="The type the limit is of (`default` for the account's one limit).")
    oldLimit: int = Field(ge=0)
    newLimit: int = Field(ge=0)
    usage: int = Field(
        description="The usage as the PUT read it: the resources admitted on the quota's account item (created, "
        "or being created), an upper bound of the exact usage; a busy quota's other admission shards are not "
        "read by a PUT, so for one it is shard 0's share."
    )
    oldThresholds: list[int] = Field(
        description="The quota's thresholds before the change, ascending: its own, or the defaults (80 and 100)."
    )
    newThresholds: list[int] = Field(
        description="The quota's thresholds after the change, ascending (equal to oldThresholds when only the "
        "limit changed)."
    )
    changedBy: str = Field(
        description="The caller as API Gateway identified it: the IAM principal's ARN (`userArn`), or a token "
        "authorizer's principal id; empty when neither is known."
    )
    changedAt: str = Field(description="When the change was written: ISO 8601, UTC.")
    limitVersion: int = Field(
        ge=2, description="The quota's limit version (its ETag) after the change: a quota's changes in order."
    )
    oldMode: Literal["enforce", "shadow"] | None = Field(
        default=None,
        description='The quota\'s mode before the change (docs/plans.md, "Shadow mode"); with newMode, present '
        "only when either is `shadow` (absent for a quota that was and stays enforced).",
    )
    newMode: Literal["enforce", "shadow"] | None = Field(
        default=None, description="The quota's mode after the change; present exactly when oldMode is."
    )


class LimitRefused(BaseModel):
    """Creates of a quota (or resizes that grow) were refused with 409 LimitExceeded in one minute:
    at most one event per quota and minute, however many were refused in it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    DETAIL_TYPE: ClassVar[str] = "Limit Refused"

    eventId: str = Field(
        description="Stable: every copy of this quota's event for this minute carries it, and no other event does."
    )
    accountId: str
    resourceType: str = Field(description="The type the limit is of (`default` for the account's one limit).")
    refused: int = Field(
        ge=1,
        description="How many creates (and growing resizes) were refused in the minute: those whose log lines "
        "reached the aggregator before the minute was announced (docs/events.md).",
    )
    refusedUnits: int = Field(
        ge=1,
        description="The units those refused requests asked for together (a create its amount, a resize its "
        "growth): equal to `refused` when each asked for one.",
    )
    limit: int = Field(ge=0, description="The limit the refusals of the last batch counted met.")
    windowStart: str = Field(description="The minute's start: ISO 8601, UTC.")
    windowEnd: str = Field(description="The minute's end (exclusive): ISO 8601, UTC.")
    shadow: Literal[True] | None = Field(
        default=None,
        description='`true` for a quota in shadow mode (docs/plans.md, "Shadow mode"): its creates were admitted, '
        "and these are the refusals enforcement would have made; a minute's shadow and enforced refusals of one "
        "quota are two events. Absent for enforced refusals (never false).",
    )


class AccountDeleted(BaseModel):
    """An admin deleted an account (`DELETE /accounts/{id}`): from then on every create of it is
    refused, and its items are erased within the documented bound (docs/plans.md, "Lifecycle").
    Announced once per deletion."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    DETAIL_TYPE: ClassVar[str] = "Account Deleted"

    eventId: str = Field(description="Stable: every copy of this deletion's event carries it, and no other event does.")
    accountId: str
    resourceTypes: list[str] = Field(
        description="The account's types when it was deleted: `default` first, then the others by name."
    )
    deletedBy: str = Field(
        description="The caller as API Gateway identified it: the IAM principal's ARN (`userArn`), or a token "
        "authorizer's principal id; empty when neither is known."
    )
    deletedAt: str = Field(description="When the DELETE was received: ISO 8601, UTC.")


# Every event type, by the detail-type it is put with.
EVENT_TYPES: dict[str, type[BaseModel]] = {
    UsageThresholdCrossed.DETAIL_TYPE: UsageThresholdCrossed,
    LimitChanged.DETAIL_TYPE: LimitChanged,
    LimitRefused.DETAIL_TYPE: LimitRefused,
    AccountDeleted.DETAIL_TYPE: AccountDeleted,
}
