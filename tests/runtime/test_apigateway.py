"""API Gateway's REST proxy: routing, the v1 event, and the response mapping, over real HTTP."""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from local.apigateway import MAX_REQUEST_BYTES, ApiGateway, PortInUse, Route, integration_response, proxy_event
from local.functions import REPO_ROOT, DeployedFunction, Invocation
from local.gateway_responses import GatewayResponses
from local.http_client import poll
from tests.support.template import synth_template_json


@dataclass
class EchoFunction:
    answer: Invocation | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    function: DeployedFunction = field(
        default_factory=lambda: DeployedFunction("api", "arn:fn", "functions.api.handler.handler", 10, 256, {})
    )

    def invoke(self, event: dict[str, Any], **how: Any) -> Invocation:
        assert how == {"synchronous": True, "patience_seconds": 29.0}  # as API Gateway invokes
        self.events.append(event)
        if self.answer is not None:
            return self.answer
        return Invocation(
            ok=True,
            payload={
                "statusCode": 201,
                "headers": {"X-Single": "1"},
                "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
                "body": json.dumps({"path": event["path"]}),
                "isBase64Encoded": False,
            },
        )


@pytest.fixture
def gateway() -> Iterator[tuple[ApiGateway, EchoFunction]]:
    function = EchoFunction()
    routes = [Route("/", "ANY", function), Route("/{proxy+}", "ANY", function)]  # type: ignore[arg-type]
    api = ApiGateway(routes, "prod", "127.0.0.1", 0)
    api.start()
    yield api, function
    api.stop()


def call(url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, Any, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers={"X-Multi": "x"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_a_request_becomes_a_v1_proxy_event(gateway: tuple[ApiGateway, EchoFunction]) -> None:
    api, function = gateway
    status, headers, body = call(f"{api.url}/accounts/a%201/resources?limit=2&tag=x&tag=y", "POST", b'{"name":"n"}')
    assert status == 201
    assert json.loads(body) == {"path": "/accounts/a%201/resources"}
    assert headers.get_all("Set-Cookie") == ["a=1", "b=2"]
    assert headers["X-Single"] == "1"
    [event] = function.events
    assert event["httpMethod"] == "POST"
    assert event["resource"] == "/{proxy+}"
    assert event["pathParameters"] == {"proxy": "accounts/a 1/resources"}
    assert event["queryStringParameters"] == {"limit": "2", "tag": "y"}
    assert event["multiValueQueryStringParameters"] == {"limit": ["2"], "tag": ["x", "y"]}
    assert event["headers"]["X-Multi"] == "x"
    assert event["body"] == '{"name":"n"}'
    assert event["isBase64Encoded"] is False
    assert event["requestContext"]["stage"] == "prod"
    assert event["requestContext"]["path"] == "/prod/accounts/a%201/resources"


def test_the_root_resource_matches_only_the_root(gateway: tuple[ApiGateway, EchoFunction]) -> None:
    api, function = gateway
    call(f"{api.url}/")
    assert function.events[0]["resource"] == "/"
    assert function.events[0]["pathParameters"] is None


def test_a_function_error_is_a_502(gateway: tuple[ApiGateway, EchoFunction]) -> None:
    api, function = gateway
    function.answer = Invocation(ok=False, error_type="Exception")
    status, _, body = call(f"{api.url}/x")
    assert status == 502
    assert json.loads(body) == {"message": "Internal server error"}


def test_a_run_past_the_function_timeout_is_a_502(gateway: tuple[ApiGateway, EchoFunction]) -> None:
    api, function = gateway
    function.answer = Invocation(ok=False, error_type="TimeoutError", timed_out=True)
    status, _, body = call(f"{api.url}/x")
    assert (status, json.loads(body)) == (502, {"message": "Internal server error"})


def test_the_integration_timeout_is_a_504(gateway: tuple[ApiGateway, EchoFunction]) -> None:
    api, function = gateway
    function.answer = Invocation(ok=False, error_type="IntegrationTimeout", caller_gave_up=True)
    status, _, body = call(f"{api.url}/x")
    assert (status, json.loads(body)) == (504, {"message": "Endpoint request timed out"})


def test_a_throttled_invocation_is_a_500(gateway: tuple[ApiGateway, EchoFunction]) -> None:
    api, function = gateway
    function.answer = Invocation(ok=False, error_type="TooManyRequestsException", throttled=True)
    status, _, body = call(f"{api.url}/x")
    assert (status, json.loads(body)) == (500, {"message": "Internal server error"})


@pytest.mark.parametrize(
    "invocation",
    [
        Invocation(ok=False, error_type="TooManyRequestsException", throttled=True),
        Invocation(ok=False, error_type="Exception"),
        Invocation(ok=False, error_type="TimeoutError", timed_out=True),
    ],
    ids=["throttled", "failed", "timed out"],
)
def test_with_the_stacks_gateway_responses_an_integration_failure_is_a_503_to_retry(invocation: Invocation) -> None:
    """API Gateway renders a rejected invocation and a function error alike, as INTEGRATION_FAILURE,
    which the stack answers 503 ServiceUnavailable with Retry-After (infra/gateway_errors.py)."""
    function = EchoFunction(answer=invocation)
    responses = GatewayResponses.from_template(synth_template_json())
    api = ApiGateway([Route("/{proxy+}", "ANY", function)], "prod", "127.0.0.1", 0, None, responses)  # type: ignore[list-item]
    api.start()
    try:
        status, headers, body = call(f"{api.url}/x")
    finally:
        api.stop()
    assert (status, headers["Retry-After"]) == (503, "1")
    assert json.loads(body)["error"]["code"] == "ServiceUnavailable"


def test_a_body_over_10_mb_is_refused_413_without_invoking_the_function() -> None:
    """API Gateway's REST payload limit is 10 MB: REQUEST_TOO_LARGE, answered by the gateway itself."""
    function = EchoFunction()
    responses = GatewayResponses.from_template(synth_template_json())
    api = ApiGateway([Route("/{proxy+}", "ANY", function)], "prod", "127.0.0.1", 0, None, responses)  # type: ignore[list-item]
    api.start()
    try:
        status, _, body = call(f"{api.url}/accounts/acme/resources", "POST", b"x" * (MAX_REQUEST_BYTES + 1))
        assert call(f"{api.url}/x", "POST", b"x" * MAX_REQUEST_BYTES)[0] == 201
    finally:
        api.stop()
    assert status == 413
    assert json.loads(body)["error"]["code"] == "PayloadTooLarge"
    assert [event["path"] for event in function.events] == ["/x"]


def test_the_run_log_says_which_status_the_caller_got(
    gateway: tuple[ApiGateway, EchoFunction], caplog: pytest.LogCaptureFixture
) -> None:
    api, function = gateway
    caplog.set_level(logging.INFO, logger="local.runtime")
    function.answer = Invocation(ok=True, payload={"statusCode": 404, "body": "{}"})
    call(f"{api.url}/accounts/nobody")
    function.answer = Invocation(ok=False, error_type="TooManyRequestsException", throttled=True)
    call(f"{api.url}/accounts/acme")
    # The gateway logs an invocation after its answer is sent, so the second call's line can come
    # first (a full run saw it): wait for both lines and tell them by their paths.
    logged = poll(
        lambda: [record.getMessage() for record in caplog.records if "GET /accounts/" in record.getMessage()],
        until=lambda lines: len(lines) == 2,
        timeout=10,
    )
    (not_found,) = [line for line in logged if line.endswith("GET /accounts/nobody")]
    (throttled,) = [line for line in logged if line.endswith("GET /accounts/acme")]
    assert " 404 " in not_found
    assert " ok " not in not_found
    assert " 500 TooManyRequestsException " in throttled


def test_a_burst_of_connections_waits_in_the_backlog_instead_of_being_refused() -> None:
    """Every client connects before the gateway accepts any: the listen backlog must hold them all.
    (With http.server's default backlog of 5, the kernel drops the rest and their connects time out.)"""
    function = EchoFunction()
    api = ApiGateway([Route("/{proxy+}", "ANY", function)], "prod", "127.0.0.1", 0)  # type: ignore[list-item]
    host, port = "127.0.0.1", int(api.url.rsplit(":", 1)[1])
    sockets = []
    try:
        for _ in range(300):
            sockets.append(socket.create_connection((host, port), timeout=2))
        api.start()
        for index, sock in enumerate(sockets):
            sock.sendall(f"GET /r{index} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        answers = [sock.makefile("rb").readline() for sock in sockets]
        assert answers == [b"HTTP/1.1 201 Created\r\n"] * 300
    finally:
        for sock in sockets:
            sock.close()
        api.stop()


def read_answer(answers: Any) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response from a socket's file, leaving the next one unread."""
    status = int(answers.readline().split()[1])
    headers = {}
    while (line := answers.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, answers.read(int(headers.get("content-length", 0)))


def test_a_chunked_body_is_decoded_and_the_next_request_on_the_connection_is_answered_in_turn(
    gateway: tuple[ApiGateway, EchoFunction],
) -> None:
    api, function = gateway
    host, port = api.url.removeprefix("http://").split(":")
    chunks = b'6\r\n{"name\r\n6;ext=1\r\n": "n"\r\n1\r\n}\r\n0\r\n\r\n'  # a chunk extension, ignored
    chunked = b"POST /first HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
    second = b"GET /second HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(chunked + second)  # pipelined: both before either answer
        answers = sock.makefile("rb")
        first_answer, second_answer = read_answer(answers), read_answer(answers)
    assert (first_answer[0], json.loads(first_answer[2])) == (201, {"path": "/first"})
    assert (second_answer[0], json.loads(second_answer[2])) == (201, {"path": "/second"})
    assert [event["body"] for event in function.events] == ['{"name": "n"}', None]


def test_an_answer_on_a_kept_alive_connection_waits_for_no_delayed_ack(
    gateway: tuple[ApiGateway, EchoFunction],
) -> None:
    """The gateway writes an answer's headers and its body in two writes. With Nagle's algorithm on
    its socket, the body waited for the client to acknowledge the headers, which the client's
    kernel delays up to 40 ms on a connection past its first exchanges: every answer of a kept-alive
    connection took over 40 ms (measured: 42 to 67 ms, against 0.2 ms without it), for every request
    of `make run` and of each test tier that calls the API."""
    api, _ = gateway
    host, port = api.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    took = []
    try:
        for index in range(10):
            started = time.perf_counter()
            connection.request("GET", f"/r{index}")
            assert connection.getresponse().read()
            took.append(time.perf_counter() - started)
    finally:
        connection.close()
    assert min(took[2:]) < 0.02, [f"{seconds * 1000:.1f} ms" for seconds in took]


@pytest.mark.parametrize(
    "framing",
    [
        b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",  # not a chunk size
        b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",  # a chunk not ended by CRLF
        b"Transfer-Encoding: gzip\r\n\r\n{}",  # chunked is not the final coding
        b"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n",  # both
    ],
)
def test_a_body_whose_length_cannot_be_told_is_refused_400_and_the_connection_closed(
    gateway: tuple[ApiGateway, EchoFunction], framing: bytes
) -> None:
    api, function = gateway
    host, port = api.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\n" + framing + b"GET /y HTTP/1.1\r\nHost: x\r\n\r\n")
        answers = sock.makefile("rb")
        status, headers, _ = read_answer(answers)
        assert (status, headers["connection"]) == (400, "close")
        assert answers.read() == b""  # closed: nothing after it is taken for a request
    assert function.events == []


def test_binary_bodies_are_base64_encoded() -> None:
    event = proxy_event("POST", "/x", [], b"\xff\x00", "/{proxy+}", {"proxy": "x"}, "prod")
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == b"\xff\x00"


def test_base64_responses_are_decoded() -> None:
    status, _, body = integration_response({"statusCode": 200, "body": "aGk=", "isBase64Encoded": True})
    assert (status, body) == (200, b"hi")


def test_routes_prefer_literal_paths_and_methods() -> None:
    literal = Route("/health", "GET", object())  # type: ignore[arg-type]
    greedy = Route("/{proxy+}", "ANY", object())  # type: ignore[arg-type]
    ordered = sorted([greedy, literal], key=lambda r: r.specificity, reverse=True)
    assert ordered[0] is literal
    assert literal.match("GET", "/health") == {}
    assert literal.match("POST", "/health") is None
    assert greedy.match("DELETE", "/a/b") == {"proxy": "a/b"}


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "PROPFIND"])
def test_a_method_no_resource_declares_is_answered_as_api_gateway_answers_it(
    gateway: tuple[ApiGateway, EchoFunction], method: str
) -> None:
    api, function = gateway
    status, headers, body = call(f"{api.url}/accounts/acme", method)
    assert (status, json.loads(body)) == (403, {"message": "Missing Authentication Token"})
    assert headers["Content-Type"] == "application/json"
    assert function.events == []


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 another listener holds."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_busy_port_is_refused_with_an_error_naming_it(busy_port: int) -> None:
    with pytest.raises(PortInUse, match=f"127.0.0.1:{busy_port} is already in use"):
        ApiGateway([Route("/{proxy+}", "ANY", EchoFunction())], "prod", "127.0.0.1", busy_port)  # type: ignore[list-item]


def test_python_m_local_exits_non_zero_naming_a_busy_port_before_starting_anything(busy_port: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "local", "--port", str(busy_port)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": REPO_ROOT},
    )
    assert done.returncode != 0
    assert f"127.0.0.1:{busy_port} is already in use" in done.stderr
    assert "Traceback" not in done.stderr
