"""Domain errors. The API maps each to one HTTP answer in one place (functions/api/errors.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from functions.core.model import Quota
    from functions.core.periods import Period


class DomainError(Exception):
    """An outcome the caller must hear about; `code` is the stable machine-readable name."""

    code = "DomainError"


def _of_type(quota: Quota) -> str:
    """How a message names a quota's type after its account: nothing for the default type (the
    routes without a type), whose messages name the account alone."""
    return "" if quota.is_default else f" type {quota.resource_type!r} of"


class AccountNotFound(DomainError):
    """The account does not exist, or (on a type's routes) it has no limit of that type."""

    code = "AccountNotFound"

    def __init__(self, quota: Quota) -> None:
        if quota.is_default:
            super().__init__(f"account {quota.account_id!r} does not exist")
        else:
            super().__init__(f"account {quota.account_id!r} has no limit of type {quota.resource_type!r}")


class ResourceNotFound(DomainError):
    code = "ResourceNotFound"

    def __init__(self, quota: Quota, resource_id: str) -> None:
        super().__init__(f"resource {resource_id!r} does not exist in{_of_type(quota)} account {quota.account_id!r}")


class LimitExceeded(DomainError):
    code = "LimitExceeded"

    def __init__(self, quota: Quota, limit: int, units: int = 1) -> None:
        what = "resources" if quota.is_default else f"resources of type {quota.resource_type!r}"
        if units == 1:
            message = f"account {quota.account_id!r} has reached its limit of {limit} {what}"
        else:
            message = f"account {quota.account_id!r} has fewer than {units} units free of its limit of {limit} {what}"
        super().__init__(message)
        self.quota = quota
        self.limit = limit
        self.units = units  # what the refused create (or growth) asked for


class TooManyResourceTypes(DomainError):
    """A PUT of a type the account does not have yet, when it has the most types it may have."""

    code = "TooManyResourceTypes"

    def __init__(self, quota: Quota, most: int) -> None:
        super().__init__(
            f"account {quota.account_id!r} has {most} resource types besides the default, the most it may "
            f"have: {quota.resource_type!r} is not one of them"
        )


class IdempotencyKeyMismatch(DomainError):
    """The key was used before with a different request body."""

    code = "IdempotencyKeyMismatch"

    def __init__(self) -> None:
        super().__init__("this Idempotency-Key was already used with a different request body")


class IdempotencyKeyReused(DomainError):
    """The resource this key created has since been deleted; replaying it would resurrect it."""

    code = "IdempotencyKeyReused"

    def __init__(self, resource_id: str) -> None:
        super().__init__(
            f"the resource {resource_id!r} created with this Idempotency-Key has been deleted; "
            "use a new key to create another"
        )


class CallerGaveUp(DomainError):
    """The request is older than API Gateway's integration timeout: its caller already got a 504,
    so the invocation writes nothing (a late invocation must change nothing)."""

    code = "GatewayTimeout"

    def __init__(self) -> None:
        super().__init__("the request timed out before it was handled; nothing was changed")


class InvalidCursor(DomainError):
    code = "InvalidCursor"

    def __init__(self) -> None:
        super().__init__("cursor is not one this API returned")


class PreconditionFailed(DomainError):
    code = "PreconditionFailed"

    def __init__(self, quota: Quota, version: int | None) -> None:
        now = "does not exist" if version is None else f'is at ETag "{version}"'
        what = (
            f"account {quota.account_id}"
            if quota.is_default
            else f"type {quota.resource_type} of account {quota.account_id}"
        )
        super().__init__(f"{what} {now}, not what If-Match asks for; read it and retry")


class ResourceChanged(PreconditionFailed):
    """A resize's If-Match names a version the resource is no longer at."""

    def __init__(self, quota: Quota, resource_id: str, version: int) -> None:
        DomainError.__init__(
            self,
            f"resource {resource_id!r} in{_of_type(quota)} account {quota.account_id!r} is at ETag "
            f'"{version}", not what If-Match asks for; read it and retry',
        )


class PeriodChangeRefused(DomainError):
    """A PUT asks a quota for another period than it has: a holding quota becomes periodic only
    while it holds nothing, and a periodic quota keeps its period (its history is counted in it)."""

    code = "PeriodChangeRefused"

    def __init__(self, quota: Quota, why: str) -> None:
        super().__init__(f"the period of{_of_type(quota)} account {quota.account_id!r} cannot change: {why}")


class PeriodClosed(DomainError):
    """A delete or resize of a usage record whose period is over: it is history, and stays counted."""

    code = "PeriodClosed"

    def __init__(self, quota: Quota, resource_id: str) -> None:
        super().__init__(
            f"resource {resource_id!r} in{_of_type(quota)} account {quota.account_id!r} was counted in the "
            f"period {quota.period}, which is over: it is history and cannot change"
        )


class QuotaNotPeriodic(DomainError):
    """A periodic quota's read (its periods' history) of a holding quota, which has no periods."""

    code = "QuotaNotPeriodic"

    def __init__(self, quota: Quota) -> None:
        super().__init__(
            f"{_of_type(quota).strip() or 'the default type of'} account {quota.account_id!r} is a holding quota: "
            "it has no periods (its usage is what it holds now)"
        )


class QuotaIsPeriodic(Exception):
    """A write meant for a holding quota's shard 0 found a periodic quota's item (this process
    did not know it was periodic yet): `period` is its period (functions/core/periods.py)."""

    def __init__(self, quota: Quota, period: Period) -> None:
        super().__init__(f"{quota} is periodic")
        self.period = period


class GrantEnded(Exception):
    """A reservation on a quota whose expiring override ended at or before the reservation's time
    (`ends`, epoch ms): nothing was written. The caller ends the grant (functions/core/grants.py)
    and admits again, by the limit that follows it. Never reaches a client."""

    def __init__(self, quota: Quota, ends: int) -> None:
        super().__init__(f"{quota}: its grant ended at {ends}")
        self.quota = quota
        self.ends = ends


class GrantRefused(DomainError):
    """A PUT with `expiresAt` on a quota whose limit cannot expire: only an override of the
    account's plan can (docs/plans.md, "Expiring grants"). A 400, nothing written."""

    code = "ValidationError"

    def __init__(self, quota: Quota, why: str) -> None:
        super().__init__(f"expiresAt: {why} ({quota.account_id!r}, type {quota.resource_type!r})")


class ShadowRefused(DomainError):
    """A quota that cannot be put in shadow mode: a periodic one (its periods admit on items of
    their own, which do not carry the mode; docs/plans.md, "Shadow mode"). A 400, nothing written."""

    code = "ValidationError"

    def __init__(self, quota: Quota, why: str) -> None:
        super().__init__(f"mode: {why} ({quota.account_id!r}, type {quota.resource_type!r})")


class PlanNotFound(DomainError):
    """No plan of that name (docs/plans.md)."""

    code = "PlanNotFound"

    def __init__(self, plan: str) -> None:
        super().__init__(f"plan {plan!r} does not exist")


class PlanPreconditionFailed(PreconditionFailed):
    """A plan's PUT whose If-Match names another version of the plan (or a plan that does not exist)."""

    def __init__(self, plan: str, version: int | None) -> None:
        now = "does not exist" if version is None else f'is at ETag "{version}"'
        DomainError.__init__(self, f"plan {plan} {now}, not what If-Match asks for; read it and retry")


class OverrideNotFound(DomainError):
    """A removal of an override from a type whose limit is not one."""

    code = "OverrideNotFound"

    def __init__(self, quota: Quota) -> None:
        super().__init__(
            f"type {quota.resource_type!r} of account {quota.account_id!r} has no override: its limit is not "
            "its own PUT's on an account whose plan gives the type"
        )


class TypeNotEmpty(DomainError):
    """A delete of a type that still holds resources (or whose deletes the stream has not counted
    yet), without `deleteResources` (docs/api.md, "Delete a type"). A 409, nothing written."""

    code = "TypeNotEmpty"

    def __init__(self, quota: Quota) -> None:
        super().__init__(
            f"type {quota.resource_type!r} of account {quota.account_id!r} holds resources: delete them first, "
            "or ask for deleteResources=true"
        )


class PlanType(DomainError):
    """A delete of a type its account's plan gives: the plan's type is the plan's (docs/plans.md,
    "Lifecycle"). A 409, nothing written: remove the override, or move the account to another plan."""

    code = "PlanType"

    def __init__(self, quota: Quota) -> None:
        super().__init__(
            f"type {quota.resource_type!r} of account {quota.account_id!r} is given by its plan: put the account "
            "on a plan without it instead"
        )


class DefaultTypeNotDeletable(DomainError):
    """A delete of the default type: it is the account's (its item holds the account's rate limit and
    types), and goes only with the account. A 400, nothing written."""

    code = "DefaultTypeNotDeletable"

    def __init__(self, quota: Quota) -> None:
        super().__init__(f"the default type of account {quota.account_id!r} goes only with the account")


class AccountBeingDeleted(DomainError):
    """A PUT that would create an account again while its deletion is under way (docs/plans.md,
    "Lifecycle"). A 409, nothing written: once the account is erased, its id is free again."""

    code = "AccountBeingDeleted"

    def __init__(self, account_id: str) -> None:
        super().__init__(f"account {account_id!r} is being deleted; its id is free again once it is erased")


class StoreUnavailable(Exception):
    """DynamoDB did not complete a call after the SDK's retries (throttling, 5xx, network).

    One type for every flow, because it means one thing: the store failed this call, and the same
    call later may succeed. What to do about it is each caller's: the API answers a plain
    retryable 503 (not a DomainError: callers never see DynamoDB's own error), the counting path
    leaves the record to be retried later (a batch item failure, the redrive, the next sweep), and
    a sweep, a heal or an operator's command fails and is run again.

    `may_have_landed` is False only when the write certainly did not happen (a 4xx such as
    throttling, or a connection never made), so the API flows may undo what preceded it. The
    counting path needs no such answer: its writes are conditional transactions that a retry
    applies at most once, landed or not.
    """

    def __init__(self, message: str, *, may_have_landed: bool, throttled: bool = False) -> None:
        super().__init__(message)
        self.may_have_landed = may_have_landed
        self.throttled = throttled  # DynamoDB refused it for capacity: the item or key is hot


class ResourceAlreadyExists(Exception):
    """A conditional create found an item under the same key (returned for inspection)."""

    def __init__(self, existing: object) -> None:
        super().__init__("an item with this key already exists")
        self.existing = existing


class AmountDiffers(Exception):
    """A delete's soft delete was refused because the live resource holds another amount than the
    delete took from best-effort (a delete that did not read the resource first takes 1): it gives
    back what it took and takes `existing.amount` (functions/core/accounts.py)."""

    def __init__(self, existing: object) -> None:
        super().__init__("the resource holds another amount")
        self.existing = existing  # the live resource, as the failed condition saw it
