"""The request being routed, as its route and the gate see it: the wiring `handler()` was given
for it, and its times (when API Gateway received it, and whether its caller still waits).

Held in a ContextVar rather than in the resolver's context, which every resolve clears as it
ends: a test may call the handler from inside a request (a fault hook), and the outer request's
flow, which reads its clock as it goes, must still find its own wiring and times after.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.data_classes.api_gateway_proxy_event import APIGatewayEventRequestContext

from functions.core import leases
from functions.shared.wiring import Wiring

# API Gateway answers 504 after its integration timeout (29 s for a REST API) and never sees the
# function's answer after that. An invocation that starts its writes later than this only changes
# what a caller who has already given up will never read: it writes nothing instead.
INTEGRATION_TIMEOUT_MS = 29_000


@dataclass(frozen=True)
class Routed:
    wiring: Wiring
    received_ms: int | None  # API Gateway's requestTimeEpoch; None in an event without one
    caller: str = ""  # who API Gateway says is calling (`caller_of`)


_routed: ContextVar[Routed] = ContextVar("routed")


@contextmanager
def routing(event: Mapping[str, Any], wiring: Wiring) -> Iterator[None]:
    """Route `event` with `wiring` while the block runs."""
    context = event.get("requestContext") or {}
    received = context.get("requestTimeEpoch")
    token = _routed.set(Routed(wiring, received if isinstance(received, int) else None, caller_of(context)))
    try:
        yield
    finally:
        _routed.reset(token)


def caller_of(request_context: Mapping[str, Any]) -> str:
    """The caller as API Gateway identified it: a token authorizer's principal id, else the IAM
    principal of a signed request (`userArn`); empty when it identified neither."""
    context = APIGatewayEventRequestContext(dict(request_context))
    authorizer = context.authorizer.principal_id if context.get("authorizer") else None
    signed = context.identity.user_arn if context.get("identity") else None
    return authorizer or signed or ""


def caller() -> str:
    return _routed.get().caller


def wired() -> Wiring:
    """The wiring of the request being routed."""
    return _routed.get().wiring


def now() -> str:
    return leases.iso_timestamp(wired().clock.now())


def received_ms() -> int:
    """When API Gateway received the request (epoch ms): the order of PUTs that counts."""
    received = _routed.get().received_ms
    return wired().clock.epoch_ms() if received is None else received


def caller_waiting() -> bool:
    """False once API Gateway has answered this request's caller with a 504."""
    received = _routed.get().received_ms
    return received is None or wired().clock.epoch_ms() - received < INTEGRATION_TIMEOUT_MS
