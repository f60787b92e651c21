"""`TransactWriteItems`' ClientRequestToken, honoured as DynamoDB honours it (moto ignores it:
a repeated token applies the transaction again).

From the DynamoDB API reference, TransactWriteItems, "ClientRequestToken"
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html):

* "multiple identical calls have the same effect as one single call": a call that repeats a
  token within the window is answered as the first call was and changes nothing;
* "A client request token is valid for 10 minutes after the first request that uses it is
  completed";
* "If you submit a request with the same client token but a change in other parameters within
  the 10-minute idempotency window, DynamoDB returns an IdempotentParameterMismatch exception."

The SDKs fill the token in themselves (botocore marks it an idempotency token) and send the same
one on every retry of a call, so a transaction whose answer was lost (a 500 after it landed) is
not applied twice when the SDK retries it. Only a completed (committed) call's token is
remembered: a cancelled transaction changed nothing, and its retry runs again. A repeat does not
pass through the partition limits (DynamoDB bills it as reads of the items; not modelled here).

A WSGI layer inside the emulator's one-request-at-a-time lock, so no two calls with one token run
together (DynamoDB answers that case with TransactionInProgressException).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from local.dynamodb_wire import dynamodb_error, read_body

TARGET = "DynamoDB_20120810.TransactWriteItems"
WINDOW_SECONDS = 600.0
MISMATCH = "Request parameters do not match the request that used the same client token"


class ClientRequestTokens:
    def __init__(
        self,
        application: Callable[..., Iterable[bytes]],
        clock: Callable[[], float] = time.monotonic,
        window_seconds: float = WINDOW_SECONDS,
    ) -> None:
        self._application = application
        self._clock = clock
        self._window = window_seconds
        # token -> (the request without its token, the answer given, when the token expires)
        self._completed: dict[str, tuple[str, list[tuple[str, str]], bytes, float]] = {}

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("HTTP_X_AMZ_TARGET") != TARGET:
            return self._application(environ, start_response)
        request = json.loads(read_body(environ) or b"{}")
        token = request.pop("ClientRequestToken", None)
        if not token:
            return self._application(environ, start_response)
        now = self._clock()
        self._forget_expired(now)
        parameters = json.dumps(request, sort_keys=True)
        if token in self._completed:
            first_parameters, headers, answer, _ = self._completed[token]
            if parameters != first_parameters:
                return dynamodb_error(start_response, "IdempotentParameterMismatchException", MISMATCH)
            start_response("200 OK", headers)
            return [answer]

        status: list[str] = []
        answer_headers: list[tuple[str, str]] = []

        def remember_status(line: str, response_headers: list[tuple[str, str]], *rest: Any) -> Any:
            status.append(line)
            answer_headers.extend(response_headers)
            return start_response(line, response_headers, *rest)

        answer = b"".join(self._application(environ, remember_status))
        if status and status[0].startswith("200"):
            self._completed[token] = (parameters, answer_headers, answer, self._clock() + self._window)
        return [answer]

    def _forget_expired(self, now: float) -> None:
        # Tokens are remembered in the order they expire (one window for all): drop from the front.
        while self._completed:
            oldest = next(iter(self._completed))
            if self._completed[oldest][3] > now:
                return
            del self._completed[oldest]
