"""The one translator of botocore failures into what the stores and the core understand.

Every call the adapters make goes through `translated` (functions/adapters/dynamo_table.py), so a
failure reaches the core as a `StoreUnavailable` and nothing else. DynamoDB's answers that a store
acts on have a class of their own, a StoreUnavailable too: a store catches the one it expects
(`ConditionFailed`, `TransactionCancelled`, `TransactionConflict`), and any other is the call
failing, as it is for every caller.

Every write on the API path is safe to retry (its condition recognises its own landing,
docs/admission.md), so the SDK's standard retries apply to all of them. What remains for the core
to know after those retries is whether a failed write may still have landed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

from functions.adapters.attributes import from_attributes
from functions.core.errors import StoreUnavailable

# Failures before the request left: nothing was sent, so nothing landed.
NOT_SENT = (ConnectTimeoutError, EndpointConnectionError)

# DynamoDB's answers when an item, a key or the table has no capacity left (after the SDK's retries).
THROTTLING_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})

# A transaction cancelled because one of its items had no capacity: that action's reason code.
THROTTLING_REASON = "ThrottlingError"

# Set on a call whose earlier attempt may have landed (see watch_attempts).
EARLIER_ATTEMPT_MAY_HAVE_LANDED = "EarlierAttemptMayHaveLanded"


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


class Refused(StoreUnavailable):
    """The service answered the call with an error (after the SDK's retries): `code` names it,
    `response` is the answer."""

    def __init__(self, operation: str, error: ClientError) -> None:
        self.code = error_code(error)
        throttled = self.code in THROTTLING_CODES
        super().__init__(f"{operation} failed: {error}", may_have_landed=may_have_landed(error), throttled=throttled)
        self.response: dict[str, Any] = error.response


class ConditionFailed(Refused):
    """A write's condition did not hold: nothing was written."""

    @property
    def item(self) -> dict[str, Any]:
        """The item as it was (plain values), if the call asked for it with
        ReturnValuesOnConditionCheckFailure; empty when it did not, or when there was no item."""
        return from_attributes(self.response.get("Item") or {})


class TransactionCancelled(Refused):
    """A transaction was cancelled, as a whole: nothing of it was written."""

    @property
    def reasons(self) -> list[tuple[str, dict[str, Any]]]:
        """Why, per action in order: its reason code ("None" for an action that was not the cause)
        and its item as it was (plain values; empty unless the action asked for it)."""
        return [
            (str(reason.get("Code", "")), from_attributes(reason.get("Item") or {}))
            for reason in self.response.get("CancellationReasons") or []
        ]

    @property
    def throttled_action(self) -> bool:
        """An action's item had no capacity left (its reason is throttling)."""
        return any(code == THROTTLING_REASON for code, _ in self.reasons)


class TransactionConflict(Refused):
    """A single-item write met a transaction in progress on its item; the SDK does not retry it."""


_REFUSALS: dict[str, type[Refused]] = {
    "ConditionalCheckFailedException": ConditionFailed,
    "TransactionCanceledException": TransactionCancelled,
    "TransactionConflictException": TransactionConflict,
}


def translate(operation: str, error: ClientError | BotoCoreError) -> StoreUnavailable:
    """What a failed call (`operation`, in words) is to the stores and the core."""
    if isinstance(error, ClientError):
        return _REFUSALS.get(error_code(error), Refused)(operation, error)
    return StoreUnavailable(f"{operation} failed: {error}", may_have_landed=may_have_landed(error))


@contextmanager
def translated(operation: str) -> Iterator[None]:
    """Run calls whose failures are translated (`translate`)."""
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        raise translate(operation, error) from error


def watch_attempts(client: Any) -> Any:
    """Make a client's errors tell whether *any* of its attempts may have landed.

    The SDK raises its last attempt's error only: a 400 after retries says nothing of an earlier
    attempt that answered 500 or timed out after sending, and may have landed (a create whose put
    landed, then had its retries throttled, would otherwise release its slot for a resource that
    exists). Botocore's `needs-retry` event sees every attempt; the flag it leaves in the call's
    context is copied onto the error. Returns the client."""
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
