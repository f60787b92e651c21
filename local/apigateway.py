"""API Gateway (REST, Lambda proxy integration, payload v1) in front of the deployed api function.

Under load it answers as API Gateway does (docs/local-runtime.md): every connection is accepted
(a deep listen backlog, a bounded pool of workers), an invocation the function's concurrency cannot
take is answered at once (500, or what the stack's INTEGRATION_FAILURE gateway response says), a
function error or a run past the function's timeout is a 502 (the same gateway response), and a
504 comes only after the integration timeout. It refuses what API Gateway refuses before the
function: bodies over 10 MB, bodies whose length cannot be told, and what its authorizers refuse.
"""

from __future__ import annotations

import base64
import errno
import logging
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from local.event_sources import log_invocation
from local.functions import FunctionPool, Invocation
from local.gateway_responses import GatewayResponses
from local.iam_authorizer import Caller, IamAuthorizer
from local.sigv4 import MISSING_TOKEN, Refusal, request_path
from local.stage_throttle import TOO_MANY_REQUESTS, StageThrottle
from local.token_authorizer import AUTHORIZER_MISCONFIGURED, Authorized, LambdaTokenAuthorizer

logger = logging.getLogger("local.runtime")

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")

# API Gateway's integration timeout for a REST API: it answers 504 then and never reads the answer.
INTEGRATION_TIMEOUT_SECONDS = 29.0
# Connections waiting to be accepted: a burst of a thousand clients is queued, never reset. (The
# kernel caps it at net.core.somaxconn, 4096 on these machines.)
LISTEN_BACKLOG = 1024
# Connections served at once; more wait, accepted, for a free worker.
WORKERS = 512
# An idle keep-alive connection is closed after this, so it cannot hold a worker forever.
IDLE_CONNECTION_SECONDS = 5.0
# The longest chunk-size or trailer line read from a chunked body.
MAX_CHUNK_LINE = 4096
# API Gateway's payload limit for a REST API: 10 MB ("Amazon API Gateway quotas"), refused with its
# REQUEST_TOO_LARGE gateway response ("Gateway response types").
MAX_REQUEST_BYTES = 10 * 1024 * 1024
# A refused body is read and dropped up to this many bytes, so that its client, still sending, gets
# the answer rather than a reset connection; beyond it the connection is closed unread.
MAX_DRAINED_BYTES = 4 * MAX_REQUEST_BYTES

# What API Gateway answers itself when the integration gives no proper response: a rejected
# invocation (throttled, or too large) and a function error are both INTEGRATION_FAILURE, each with
# its own default status; a proxy response it cannot read is its own configuration error.
FUNCTION_REJECTED = Refusal("INTEGRATION_FAILURE", 500, "Internal server error")
FUNCTION_FAILED = Refusal("INTEGRATION_FAILURE", 502, "Internal server error")
MALFORMED_RESPONSE = Refusal("DEFAULT_5XX", 502, "Internal server error")
ENDPOINT_TIMED_OUT = Refusal("INTEGRATION_TIMEOUT", 504, "Endpoint request timed out")


class Unreadable(Exception):
    """A request body not read: answered with `refusal`, then `unread` bytes of it dropped and the
    connection closed, since where the next request starts is unknown."""

    def __init__(self, refusal: Refusal, unread: int = 0) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal
        self.unread = unread


BAD_FRAMING = Refusal("DEFAULT_4XX", 400, "Bad Request")
REQUEST_TOO_LARGE = Refusal("REQUEST_TOO_LARGE", 413, "Request Too Long")


def read_body(headers: Message, stream: BufferedIOBase) -> bytes:
    """The request's body, framed as HTTP/1.1 frames it (RFC 9112, section 6): by Content-Length, or
    by the chunked transfer coding, which a recipient must be able to decode. A Transfer-Encoding
    other than chunked alone, or together with a Content-Length, makes the length unknowable (a
    request smuggling attempt, or a coding not supported): refused, 400."""
    coding = headers.get("Transfer-Encoding")
    if coding is None:
        length = int(headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BYTES:
            raise Unreadable(REQUEST_TOO_LARGE, unread=length)
        return stream.read(length)
    if coding.strip().lower() != "chunked" or headers.get("Content-Length") is not None:
        raise Unreadable(BAD_FRAMING)
    body = bytearray()
    while True:
        size_line = stream.readline(MAX_CHUNK_LINE)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)  # after ";": chunk extensions, ignored
        except ValueError:
            raise Unreadable(BAD_FRAMING) from None
        if size == 0:
            break
        if len(body) + size > MAX_REQUEST_BYTES:
            raise Unreadable(REQUEST_TOO_LARGE)
        body += stream.read(size)
        if stream.readline(MAX_CHUNK_LINE) != b"\r\n":
            raise Unreadable(BAD_FRAMING)
    while stream.readline(MAX_CHUNK_LINE) not in (b"\r\n", b"\n", b""):  # trailer fields, ignored
        pass
    return bytes(body)


class PortInUse(OSError):
    """The gateway's port is taken (another `make run`, say)."""


def _bind_error(error: OSError, host: str, port: int) -> OSError:
    if error.errno != errno.EADDRINUSE:
        return error
    return PortInUse(error.errno, f"{host}:{port} is already in use (another `make run`?); choose another with --port")


def check_port_free(host: str, port: int) -> None:
    """Raise PortInUse now if the gateway could not bind `port`, so a run fails before its deploy."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server binds
        try:
            probe.bind((host, port))
        except OSError as error:
            raise _bind_error(error, host, port) from error


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer with a listen backlog of LISTEN_BACKLOG (its default of 5 resets the
    connections of a burst) and a bounded pool of worker threads instead of one thread each."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        # Before binding: a failed bind calls server_close, which shuts the workers down.
        self._workers = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="api-gateway")
        try:
            super().__init__(address, handler)
        except OSError as error:
            raise _bind_error(error, *address) from error

    def process_request(self, request: Any, client_address: Any) -> None:
        self._workers.submit(self.process_request_thread, request, client_address)

    def server_close(self) -> None:
        super().server_close()
        self._workers.shutdown(wait=False, cancel_futures=True)


@dataclass(frozen=True)
class Route:
    """One method of one API resource, e.g. ANY /{proxy+}, integrated with a function."""

    resource_path: str
    method: str  # an HTTP method or ANY
    function: FunctionPool
    authorization: str = "NONE"  # the method's authorizationType: NONE, AWS_IAM or CUSTOM

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if self.method not in ("ANY", method):
            return None
        found = re.fullmatch(_path_pattern(self.resource_path), path)
        return None if found is None else {k: unquote(v) for k, v in found.groupdict().items()}

    @property
    def specificity(self) -> tuple[int, int]:
        """Literal paths beat parameters, parameters beat greedy ones, a method beats ANY."""
        return (-self.resource_path.count("+"), int(self.method != "ANY"))


def _path_pattern(resource_path: str) -> str:
    pattern = ""
    for part in re.split(r"(\{[^}]+\})", resource_path):
        if part.startswith("{") and part.endswith("+}"):
            pattern += f"(?P<{part[1:-2]}>.+)"
        elif part.startswith("{"):
            pattern += f"(?P<{part[1:-1]}>[^/]+)"
        else:
            pattern += re.escape(part)
    return pattern


def proxy_event(
    method: str,
    raw_path: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    resource_path: str,
    path_parameters: Mapping[str, str] | None,
    stage: str,
    source_ip: str = "127.0.0.1",
    caller: Caller | None = None,
    authorized: Authorized | None = None,
    received_ms: int | None = None,
) -> dict[str, Any]:
    """The Lambda proxy integration's request event (payload format 1.0), received at `received_ms`
    (epoch ms; the system clock's now unless given)."""
    path = request_path(raw_path)
    query = parse_qsl(urlsplit(raw_path).query, keep_blank_values=True)
    multi_query: dict[str, list[str]] = {}
    for name, value in query:
        multi_query.setdefault(name, []).append(value)
    multi_headers: dict[str, list[str]] = {}
    for name, value in headers:
        multi_headers.setdefault(name, []).append(value)
    try:
        text: str | None = body.decode("utf-8") if body else None
        encoded = False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode(), True
    return {
        "resource": resource_path,
        "path": path,
        "httpMethod": method,
        "headers": {name: values[-1] for name, values in multi_headers.items()} or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": {name: values[-1] for name, values in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": dict(path_parameters) if path_parameters else None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": resource_path,
            "httpMethod": method,
            "path": f"/{stage}{path}",
            "stage": stage,
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000) if received_ms is None else received_ms,
            "protocol": "HTTP/1.1",
            # Filled for a method authorized by a Lambda authorizer: its principalId and context.
            **({"authorizer": authorized.as_request_context()} if authorized is not None else {}),
            "identity": {
                "sourceIp": source_ip,
                "userAgent": dict(headers).get("User-Agent", ""),
                # Filled for a method authorized with AWS_IAM, as API Gateway fills them.
                **(
                    {
                        "accessKey": caller.identity.access_key_id,
                        "accountId": caller.account_id,
                        "caller": caller.principal,
                        "user": caller.principal,
                        "userArn": caller.user_arn,
                    }
                    if caller is not None
                    else {}
                ),
            },
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


class ApiGateway:
    def __init__(
        self,
        routes: Sequence[Route],
        stage: str,
        host: str,
        port: int,
        authorizer: IamAuthorizer | None = None,
        responses: GatewayResponses | None = None,
        throttle: StageThrottle | None = None,
        token_authorizer: LambdaTokenAuthorizer | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        # What stamps a request's `requestTimeEpoch`: the system clock, or the runtime's shifted one.
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._routes = sorted(routes, key=lambda route: route.specificity, reverse=True)
        self._stage = stage
        self._authorizer = authorizer
        self._token_authorizer = token_authorizer
        self._responses = responses or GatewayResponses()
        self._throttle = throttle
        self._host = host
        self._server = _Server((host, port), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, name="api-gateway", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._server.server_port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() waits for serve_forever: never call it before start()
            self._server.shutdown()
        self._server.server_close()

    def authorize(
        self, method: str, raw_path: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> Caller | Refusal:
        if self._authorizer is None:  # the template asks for IAM but no roles were found: refuse all
            return Refusal("ACCESS_DENIED", 403, "no IAM policies known to the local gateway", message_key="Message")
        return self._authorizer.check(method, raw_path, dict(headers), body)

    def authorize_token(self, method: str, raw_path: str, headers: Iterable[tuple[str, str]]) -> Authorized | Refusal:
        if self._token_authorizer is None:  # a CUSTOM method whose authorizer the template does not hold
            return AUTHORIZER_MISCONFIGURED
        return self._token_authorizer.check(method, raw_path, dict(headers))

    def route(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self._routes:
            parameters = route.match(method, path)
            if parameters is not None:
                return route, parameters
        return None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive
            # An answer's headers and body go out in two writes: with Nagle's algorithm, the body
            # waited up to 40 ms for the client's delayed acknowledgement of the headers.
            disable_nagle_algorithm = True
            timeout = IDLE_CONNECTION_SECONDS

            def log_message(self, format: str, *args: Any) -> None:
                return  # one line per invocation is logged instead

            def _serve(self) -> None:
                body = self._body()
                if body is None:
                    return
                path = request_path(self.path)
                found = gateway.route(self.command, path)
                if found is None:
                    self._refuse(MISSING_TOKEN)
                    return
                route, parameters = found
                caller, authorized = None, None
                if route.authorization == "AWS_IAM":
                    checked = gateway.authorize(self.command, self.path, self.headers.items(), body)
                    if isinstance(checked, Refusal):
                        log_refusal(self.command, path, checked)
                        self._refuse(checked)
                        return
                    caller = checked
                elif route.authorization == "CUSTOM":
                    token_checked = gateway.authorize_token(self.command, self.path, self.headers.items())
                    if isinstance(token_checked, Refusal):
                        log_refusal(self.command, path, token_checked)
                        self._refuse(token_checked)
                        return
                    authorized = token_checked
                if gateway._throttle is not None and not gateway._throttle.take():
                    self._refuse(TOO_MANY_REQUESTS)
                    return
                event = proxy_event(
                    self.command,
                    self.path,
                    list(self.headers.items()),
                    body,
                    route.resource_path,
                    parameters,
                    gateway._stage,
                    self.client_address[0],
                    caller,
                    authorized,
                    gateway._clock_ms(),
                )
                invocation = route.function.invoke(
                    event, synchronous=True, patience_seconds=INTEGRATION_TIMEOUT_SECONDS
                )
                if invocation.ok and isinstance(invocation.payload, Mapping):
                    status, headers, answer = integration_response(invocation.payload)
                    self._reply(status, headers, answer)
                else:
                    refusal = failure_answer(invocation) if not invocation.ok else MALFORMED_RESPONSE
                    status = self._refuse(refusal, event["requestContext"]["requestId"])
                name = route.function.function.short_name
                log_invocation(name, 1, invocation, f"{self.command} {path}", status)

            def _body(self) -> bytes | None:
                """The request's body; None when it could not be read and the answer is sent."""
                try:
                    return read_body(self.headers, self.rfile)
                except Unreadable as unreadable:
                    self._refuse(unreadable.refusal, closing=True)
                    unread = min(unreadable.unread, MAX_DRAINED_BYTES)
                    while unread > 0 and (dropped := self.rfile.read(min(unread, 1 << 16))):
                        unread -= len(dropped)
                    return None

            def _refuse(self, refusal: Refusal, request_id: str | None = None, closing: bool = False) -> int:
                """API Gateway's own answer, through the stack's gateway responses; its status."""
                answer = gateway._responses.answer(
                    refusal.response_type,
                    refusal.status,
                    refusal.message,
                    request_id or str(uuid.uuid4()),
                    refusal.message_key,
                )
                self._reply(
                    answer.status, {**answer.headers, **({"Connection": "close"} if closing else {})}, answer.body
                )
                return answer.status

            def _reply(self, status: int, headers: Mapping[str, str | list[str]], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():  # "Connection: close" closes it after the answer
                    for one in value if isinstance(value, list) else [value]:
                        self.send_header(name, one)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _no_such_method(self) -> None:
                """A method no API Gateway resource declares (TRACE, say): API Gateway answers it as
                it answers an unknown path, not with the HTTP server's HTML 501."""
                if self._body() is not None:
                    self._refuse(MISSING_TOKEN)

            def __getattr__(self, name: str) -> Any:
                if name.startswith("do_"):
                    return self._no_such_method
                raise AttributeError(name)

        for method in METHODS:
            setattr(Handler, f"do_{method}", Handler._serve)
        return Handler


def log_refusal(method: str, path: str, refusal: Refusal) -> None:
    logger.info("api-gateway %s %s -> %d %s", method, path, refusal.status, refusal.response_type)


def failure_answer(invocation: Invocation) -> Refusal:
    """What API Gateway answers when the Lambda invocation fails ("Handle Lambda errors in API
    Gateway"): a rejected invocation (throttled, or an event over Lambda's 6 MB) is a 500, a
    function error or a run past the function's timeout a 502, both through the INTEGRATION_FAILURE
    gateway response, and the integration timeout a 504. It never retries."""
    if invocation.rejected:
        return FUNCTION_REJECTED
    if invocation.caller_gave_up:
        return ENDPOINT_TIMED_OUT
    return FUNCTION_FAILED


def integration_response(payload: Mapping[str, Any]) -> tuple[int, dict[str, str | list[str]], bytes]:
    """Status, headers and body from a proxy integration's response."""
    headers: dict[str, str | list[str]] = {}
    for name, values in (payload.get("multiValueHeaders") or {}).items():
        headers[name] = [str(value) for value in values]
    for name, value in (payload.get("headers") or {}).items():
        headers[name] = str(value)
    body = payload.get("body") or ""
    raw = base64.b64decode(body) if payload.get("isBase64Encoded") else str(body).encode()
    headers.setdefault("Content-Type", "application/json")
    return int(payload.get("statusCode", 200)), headers, raw
