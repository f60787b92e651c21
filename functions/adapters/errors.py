"""Translate botocore failures into what the core understands, and retry only what is safe.

Two kinds of write exist on the API path. Writes whose duplicate is harmless (conditional puts,
reservations, best-effort decrements) go through a client with the SDK's standard retries.
Writes whose duplicate would break an invariant (the best-effort increment, the slot release)
go through a client without SDK retries and are retried here only when the failure proves the
write did not happen: a 4xx answer (throttling) or a connection never established.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

from functions.core.errors import StoreUnavailable

T = TypeVar("T")

_THROTTLING_CODES = frozenset({"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"})


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def is_throttling(error: ClientError) -> bool:
    return error_code(error) in _THROTTLING_CODES


def may_have_landed(error: Exception) -> bool:
    """False only when the request certainly changed nothing."""
    if isinstance(error, ClientError):
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 500)
        return status >= 500
    return not isinstance(error, (ConnectTimeoutError, EndpointConnectionError))


def unavailable(operation: str, error: Exception) -> StoreUnavailable:
    return StoreUnavailable(f"{operation} failed: {error}", may_have_landed=may_have_landed(error))


def call_at_most_once(
    operation: str,
    call: Callable[[], T],
    attempts: int = 4,
    base_delay: float = 0.05,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run a non-idempotent write; retry only failures that prove it did not land."""
    for attempt in range(attempts):
        try:
            return call()
        except (ClientError, BotoCoreError) as error:
            definite = not may_have_landed(error)
            retryable = definite and (not isinstance(error, ClientError) or is_throttling(error))
            if not retryable or attempt == attempts - 1:
                raise unavailable(operation, error) from error
            sleep(base_delay * (2**attempt))
    raise AssertionError("unreachable")  # pragma: no cover
