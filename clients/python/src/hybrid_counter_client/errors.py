"""Every answer of the API that is not a success, as an exception named after the envelope's
`error.code` (docs/security.md, "Every answer a client can get"): all subclasses of
`HybridCounterError`, grouped by status family, so a caller catches as narrowly as it wants.

`retryable` is what the client retries on its own (docs/security.md's "Retry" column): a 429 after
`Retry-After`, and a 5xx or a lost answer, because every call this client makes is safe to repeat
(a create always carries an Idempotency-Key, a resize its Idempotency-Key and If-Match: retries.py).
Any other 4xx gets the same answer again.
"""

from __future__ import annotations

from typing import ClassVar


class HybridCounterError(Exception):
    """An answer the call did not succeed with. `status` is the HTTP status (None when no answer
    came), `code` the envelope's `error.code` (None when the body was not the envelope),
    `request_id` the envelope's `requestId` or the `x-amzn-RequestId` header, `retry_after` the
    `Retry-After` header in seconds, `attempts` how many requests the call made."""

    retryable: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.retry_after = retry_after
        self.attempts = 1

    def __str__(self) -> str:
        answer = " ".join(str(part) for part in (self.status, self.code) if part is not None) or "no answer"
        where = f" (request id {self.request_id})" if self.request_id else ""
        return f"{answer}: {self.message}{where}"


class ClientError(HybridCounterError):
    """A 4xx: the request as sent will not succeed; change it (or wait for what its code says)."""


class TooManyRequests(ClientError):
    """A 429: refused before anything ran; retried after `Retry-After`."""

    retryable = True


class ServerError(HybridCounterError):
    """A 5xx: the call may or may not have landed; retried, since every call is safe to repeat."""

    retryable = True


class NoResponse(HybridCounterError):
    """No HTTP answer (connection refused or closed, a timeout): retried like a 5xx. The transport's
    own exception is the `__cause__`."""

    retryable = True


class UnexpectedResponse(HybridCounterError):
    """A success status the operation does not answer, or a body that is not what the API
    documents: the client and the API disagree (a newer API, or something else at the URL)."""


# 400
class ValidationError(ClientError):
    """A path, query, header or body the contract does not allow; nothing was written."""


class InvalidCursor(ClientError):
    """A cursor this API did not return: start again from the first page."""


# 401, 403: API Gateway, before the function runs
class Unauthorized(ClientError):
    """No bearer token, or one that fails verification (the JWT authorizer only)."""


class MissingAuthenticationToken(ClientError):
    """The request was not signed (or used a method API Gateway does not take)."""


class InvalidSignature(ClientError):
    """The signature did not verify: wrong secret, a clock more than five minutes off, a session key
    without its token."""


class ExpiredToken(ClientError):
    """The session's token expired: the session needs new credentials."""


class AccessDenied(ClientError):
    """Signed right, but the caller's role may not do this (another tenant's path, a tenant
    setting a limit)."""


# 404, 405
class AccountNotFound(ClientError):
    """No such account."""


class ResourceNotFound(ClientError):
    """No such live resource."""


class PlanNotFound(ClientError):
    """No plan of that name (docs/plans.md); an account's PUT with it wrote nothing."""


class OverrideNotFound(ClientError):
    """The type's limit is not an override of its account's plan: nothing to remove."""


class RouteNotFound(ClientError):
    """A path the API does not have."""


class MethodNotAllowed(ClientError):
    """A path the API has, with a method it does not take."""


# 409, 412, 413, 422
class LimitExceeded(ClientError):
    """The account is at its limit: free a slot (delete) or raise the limit."""


class IdempotencyKeyReused(ClientError):
    """The key's resource was deleted: a new key makes a new resource."""


class TooManyResourceTypes(ClientError):
    """A PUT of a new type when the account has the most types it may have (50 besides the default)."""


class PeriodChangeRefused(ClientError):
    """A PUT asks a quota for another period than it has: a holding quota becomes periodic only
    while it holds nothing, and a periodic quota keeps its period and anchor (docs/periods.md)."""


class PeriodClosed(ClientError):
    """A delete or resize of a usage record whose period is over: it is history, and stays counted."""


class QuotaNotPeriodic(ClientError):
    """A history of a holding quota, which has no periods (docs/periods.md)."""


class AccountBeingDeleted(ClientError):
    """A PUT that would create an account again while its deletion is under way: its id is free
    again once the account is erased (docs/plans.md, "Lifecycle")."""


class TypeNotEmpty(ClientError):
    """A delete of a type that holds resources, without `delete_resources=True` (docs/api.md)."""


class PlanType(ClientError):
    """A delete of a type the account's plan gives: move the account to a plan without it."""


class DefaultTypeNotDeletable(ClientError):
    """A delete of the default type: it goes only with its account."""


class PreconditionFailed(ClientError):
    """`If-Match` names another version of the limit (or of the resource, for a resize): read it
    again for its new `etag`."""


class PayloadTooLarge(ClientError):
    """A body over 64 KiB (over 10 MB: API Gateway)."""


class IdempotencyKeyMismatch(ClientError):
    """The key was sent before with another body."""


class RequestRefused(ClientError):
    """Any other refusal of API Gateway's (its DEFAULT_4XX)."""


# 429
class TenantThrottled(TooManyRequests):
    """The account is over its rate limit."""


class Throttled(TooManyRequests):
    """Over the stage's throttle, every tenant together."""


class QuotaExceeded(TooManyRequests):
    """Over a usage plan's quota, if one was added in front of the API."""


# 5xx
class InternalError(ServerError):
    """A failure of API Gateway's own, or a function answer that was not a proxy response."""


class ServiceUnavailable(ServerError):
    """DynamoDB failed after retries, or the function was throttled, failed or timed out."""


class IntegrationTimeout(ServerError):
    """The function did not answer within API Gateway's 29 s."""


class InvalidPathValue(ValueError):
    """A path value (an account id, resource type or resource id) the API's own pattern does not
    take, refused before anything is sent: no request, no retry. Not an answer of the API, so not
    a HybridCounterError; a ValueError, as for any argument of the wrong value. `parameter` is the
    argument's name (`resource_type`), `value` what was passed, `pattern` the API's pattern for it."""

    def __init__(self, parameter: str, value: object, pattern: str) -> None:
        super().__init__(f"{parameter}={value!r} is not one the API takes (it must match {pattern}); nothing was sent")
        self.parameter = parameter
        self.value = value
        self.pattern = pattern


def _codes() -> dict[str, type[HybridCounterError]]:
    families = {HybridCounterError, ClientError, TooManyRequests, ServerError, NoResponse, UnexpectedResponse}
    found: dict[str, type[HybridCounterError]] = {}
    pending: list[type[HybridCounterError]] = [HybridCounterError]
    while pending:
        kind = pending.pop()
        pending.extend(kind.__subclasses__())
        if kind not in families and kind.__module__ == __name__:
            found[kind.__name__] = kind
    return found


# The envelope's codes, each to its class: the class is named after the code.
ERRORS_BY_CODE: dict[str, type[HybridCounterError]] = _codes()


def family_of(status: int | None) -> type[HybridCounterError]:
    """The class for an answer whose code this client does not know, by its status."""
    if status == 429:
        return TooManyRequests
    if status is not None and 400 <= status < 500:
        return ClientError
    if status is not None and status >= 500:
        return ServerError
    return HybridCounterError


def error_for(
    status: int, code: str | None, message: str, request_id: str | None, retry_after: float | None
) -> HybridCounterError:
    kind = ERRORS_BY_CODE.get(code or "") or family_of(status)
    return kind(message, status=status, code=code, request_id=request_id, retry_after=retry_after)
