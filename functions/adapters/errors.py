"""Translate botocore failures into what the core understands.

Every write on the API path is safe to retry (its condition recognises its own landing,
docs/admission.md), so the SDK's standard retries apply to all of them. What remains for the core
to know after those retries is whether a failed write may still have landed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

from functions.adapters.pages import read_pages
from functions.core.counting import TransientStoreError
from functions.core.errors import StoreUnavailable

# Failures before the request left: nothing was sent, so nothing landed.
NOT_SENT = (ConnectTimeoutError, EndpointConnectionError)


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


# Set on a call whose earlier attempt may have landed (see watch_attempts).
EARLIER_ATTEMPT_MAY_HAVE_LANDED = "EarlierAttemptMayHaveLanded"


def watch_attempts(client: Any) -> Any:
    """Make a client's errors tell whether *any* of its attempts may have landed.

    The SDK raises its last attempt's error only: a 400 after retries says nothing of an earlier
    attempt that answered 500 or timed out after sending, and may have landed (found by chaos,
    seed 2: a create whose put landed, then had its retries throttled, released its slot for a
    resource that existed). Botocore's `needs-retry` event sees every attempt; the flag it leaves
    in the call's context is copied onto the error. Returns the client."""
    events = client.meta.events

    def attempt(request_dict: dict[str, Any], response: Any = None, caught_exception: Any = None, **_: Any) -> None:
        ambiguous = (response is not None and response[0].status_code >= 500) or (
            caught_exception is not None and not isinstance(caught_exception, NOT_SENT)
        )
        if ambiguous:
            request_dict.setdefault("context", {})[EARLIER_ATTEMPT_MAY_HAVE_LANDED] = True

    def answered(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if context.get(EARLIER_ATTEMPT_MAY_HAVE_LANDED):
            parsed.setdefault("ResponseMetadata", {})[EARLIER_ATTEMPT_MAY_HAVE_LANDED] = True

    def failed(exception: Exception, context: dict[str, Any], **_: Any) -> None:
        if context.get(EARLIER_ATTEMPT_MAY_HAVE_LANDED):
            setattr(exception, EARLIER_ATTEMPT_MAY_HAVE_LANDED, True)

    # First: the SDK's own retry handler answers this event, and the first answer ends it.
    events.register_first("needs-retry.dynamodb", attempt, unique_id="hybrid-counter-attempts")
    events.register("after-call.dynamodb", answered, unique_id="hybrid-counter-answered")
    events.register("after-call-error.dynamodb", failed, unique_id="hybrid-counter-failed")
    return client


def may_have_landed(error: Exception) -> bool:
    """False only when the request certainly changed nothing, in any of its attempts."""
    if getattr(error, EARLIER_ATTEMPT_MAY_HAVE_LANDED, False):
        return True
    if isinstance(error, ClientError):
        metadata = error.response.get("ResponseMetadata", {})
        if metadata.get(EARLIER_ATTEMPT_MAY_HAVE_LANDED):
            return True
        status = int(metadata.get("HTTPStatusCode") or 500)
        return status >= 500
    return not isinstance(error, NOT_SENT)


# DynamoDB's answers when an item, a key or the table has no capacity left (after the SDK's retries).
THROTTLING_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})


# A transaction cancelled because one of its items had no capacity: that action's reason code.
THROTTLING_REASON = "ThrottlingError"


def cancellation_codes(error: ClientError) -> set[str]:
    """The reason codes of a cancelled transaction (TransactionCanceledException)."""
    return {str(reason.get("Code", "")) for reason in error.response.get("CancellationReasons") or []}


def unavailable(operation: str, error: Exception) -> StoreUnavailable:
    throttled = isinstance(error, ClientError) and error_code(error) in THROTTLING_CODES
    return StoreUnavailable(f"{operation} failed: {error}", may_have_landed=may_have_landed(error), throttled=throttled)


def condition_failed_item(error: ClientError) -> dict[str, Any] | None:
    return error.response.get("Item")  # type: ignore[no-any-return]


def transient_pages(
    client: Any, request: dict[str, Any], context: str = "", operation: str = "query"
) -> Iterator[dict[str, Any]]:
    """A Query's (or a Scan's) pages; a failure on any page is transient (the sweeper tries again)."""
    try:
        yield from read_pages(client, request, operation)
    except (ClientError, BotoCoreError) as error:
        raise TransientStoreError(f"{context}{error}") from error
