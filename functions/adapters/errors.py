"""Translate botocore failures into what the core understands.

Every write on the API path is safe to retry (its condition recognises its own landing,
docs/admission.md), so the SDK's standard retries apply to all of them. What remains for the core
to know after those retries is whether a failed write may still have landed.
"""

from __future__ import annotations

from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError

from functions.core.errors import StoreUnavailable


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def may_have_landed(error: Exception) -> bool:
    """False only when the request certainly changed nothing."""
    if isinstance(error, ClientError):
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 500)
        return status >= 500
    return not isinstance(error, (ConnectTimeoutError, EndpointConnectionError))


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
