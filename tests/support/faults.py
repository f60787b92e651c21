"""Failure injection through botocore's event hooks, on the clients the handlers really use.

A test's `faults` fixture is a `Faults` over the test's own `Wiring`, the one its handlers are
given: hooks go on its clients' event emitters, so nothing global changes and nothing leaks into
the next test. Matching is on the API parameters of the call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ReadTimeoutError
from botocore.httpsession import URLLib3Session

from functions.adapters import account_item, resources, table_layout
from functions.shared.wiring import Wiring
from local.dynamodb_wire import error_body
from local.faults import ANSWERS, answer_on_the_wire, aws_response, cancelled_body, on_matching_send

Params = dict[str, Any]


class SimulatedCrash(Exception):
    """The function died right after a write landed (nothing in the system catches this)."""


def dynamodb_error(code: str, message: str = "injected", **fields: Any) -> dict[str, Any]:
    return error_body(code, message, **fields)


transaction_cancelled = cancelled_body


def expression(params: Params) -> str:
    return str(params.get("UpdateExpression", ""))


def _lease_kind(params: Params) -> str:
    lease = str(params.get("ExpressionAttributeNames", {}).get("#lease", ""))
    return next((kind.value for kind, prefix in account_item.LEASE_PREFIXES.items() if lease.startswith(prefix)), "")


def _takes(kind: str) -> Callable[[Params], bool]:
    return lambda params: _lease_kind(params) == kind and "#lease = :lease" in expression(params)


def _settles(kind: str, attribute: str) -> Callable[[Params], bool]:
    return lambda params: (
        _lease_kind(params) == kind
        and "REMOVE #lease" in expression(params)
        and f"{attribute} :{attribute}" in expression(params)
    )


# Every write on the API path, by name (docs/admission.md): (operation, which calls are it).
API_WRITES: dict[str, tuple[str, Callable[[Params], bool]]] = {
    "reserve": ("UpdateItem", _takes("reservation")),
    "put": ("PutItem", lambda p: True),
    "commit": ("UpdateItem", _settles("reservation", "best_effort")),
    "release": ("UpdateItem", _settles("reservation", "admitted")),
    "take-deletion": ("UpdateItem", _takes("deletion")),
    "soft-delete": ("UpdateItem", lambda p: f"SET {table_layout.DELETED} = :true" in expression(p)),
    "finish-deletion": ("UpdateItem", _settles("deletion", "admitted")),
    "undo-deletion": ("UpdateItem", _settles("deletion", "best_effort")),
    "take-growth": ("UpdateItem", _takes("growth")),
    "take-shrink": ("UpdateItem", _takes("shrink")),
    "resize": ("UpdateItem", lambda p: f"{resources.RESIZE_TOKEN} = :token" in expression(p)),
    "commit-growth": ("UpdateItem", _settles("growth", "best_effort")),
    "finish-shrink": ("UpdateItem", _settles("shrink", "admitted")),
}


class Faults:
    """Faults on the clients of one test's wiring. The module's helpers are here too, so a test needs only this."""

    SimulatedCrash = SimulatedCrash
    API_WRITES = API_WRITES
    dynamodb_error = staticmethod(dynamodb_error)
    transaction_cancelled = staticmethod(cancelled_body)
    expression = staticmethod(expression)

    def __init__(self, wiring: Wiring) -> None:
        self._wiring = wiring

    def events(self, service: str = "dynamodb") -> Any:
        """The event emitter of the test's client for `service` ("dynamodb" or "dynamodb-streams")."""
        client = self._wiring.dynamodb if service == "dynamodb" else self._wiring.streams
        return client.meta.events

    def lands_then(
        self,
        error_factory: Callable[[], Exception],
        service: str,
        operation: str,
        matches: Callable[[Params], bool],
        times: int = 1,
    ) -> None:
        """After a matching call has landed, raise `error_factory()` to the caller, `times` times."""
        events = self.events(service)
        flag = f"fault_{id(matches)}_{id(error_factory)}"  # one per registration
        remaining = [times]
        lock = threading.Lock()

        def remember(params: Params, context: dict[str, Any], **_: Any) -> None:
            context[flag] = matches(params)

        def fail_after(context: dict[str, Any], **_: Any) -> None:
            with lock:
                if not context.get(flag) or remaining[0] == 0:
                    return
                remaining[0] -= 1
            raise error_factory()

        events.register(f"provide-client-params.{service}.{operation}", remember)
        events.register(f"after-call.{service}.{operation}", fail_after)

    def crash_after(self, operation: str, matches: Callable[[Params], bool] = lambda _: True, times: int = 1) -> None:
        self.lands_then(lambda: SimulatedCrash(f"crashed after {operation}"), "dynamodb", operation, matches, times)

    def crash_after_write(self, name: str) -> None:
        operation, matches = API_WRITES[name]
        self.crash_after(operation, matches)

    def time_out_after(
        self, operation: str, matches: Callable[[Params], bool] = lambda _: True, times: int = 1
    ) -> None:
        """The write lands but the answer never arrives: the ambiguous failure."""
        self.lands_then(lambda: ReadTimeoutError(endpoint_url="emulator"), "dynamodb", operation, matches, times)

    def lands_then_500(
        self,
        operation: str,
        matches: Callable[[Params], bool],
        meanwhile: Callable[[], object] = lambda: None,
        service: str = "dynamodb",
    ) -> list[int]:
        """The first matching call is sent and lands; then `meanwhile()` runs (the rest of the system
        moves on: the consumer counts, another request writes); then the caller gets a 500
        InternalServerError, which the SDK retries as it retries a read timeout.

        Injected at `before-send`, below the SDK's retry loop. Returns a one-item list counting the
        calls that landed this way."""
        landed = [0]
        lock = threading.Lock()
        http = URLLib3Session()

        def land_then_fail(request: Any) -> Any:
            with lock:
                if landed[0]:
                    return None
                landed[0] += 1
            answer = http.send(request)
            assert answer.status_code == 200, answer.content  # it landed
            meanwhile()
            status, body = ANSWERS["InternalServerError"]
            return aws_response(request, status, body)

        on_matching_send(self.events(service), service, operation, matches, land_then_fail)
        return landed

    def answer_instead(
        self,
        operation: str,
        matches: Callable[[Params], bool],
        error: dict[str, Any],
        status: int = 400,
        times: int = 1,
        service: str = "dynamodb",
    ) -> list[int]:
        """Answer matching requests with an AWS error on the wire, without sending them (nothing lands).

        Injected at `before-send`, below the SDK's retry loop, so the SDK retries it as it would a real
        answer. `error` is the JSON body DynamoDB sends (`__type`, `message`, modeled fields). Returns a
        one-item list counting the answers given.
        """
        return answer_on_the_wire(self.events(service), service, operation, matches, status, error, times)

    def before_call(self, operation: str, action: Callable[[Params], None], service: str = "dynamodb") -> None:
        """Run `action(params)` just before each matching call is sent (to line up races)."""
        self.events(service).register(
            f"provide-client-params.{service}.{operation}", lambda params, **_: action(params)
        )
