"""The gate (functions/api/gate.py): what a request passes once its route is matched, before its
body is parsed and validated, in order: its body's size and encoding, its tenant's rate, its
query parameters. Run on a resolver of its own, with the API's middlewares and error answers."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Annotated, Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from pydantic import BaseModel

from functions.api import errors, gate
from functions.api.json_body import parse_body
from functions.api.routed import routing
from functions.core.rate_limits import Decision
from functions.shared.observability import metrics
from tests.support.api_events import proxy_event
from tests.support.lambda_context import FakeLambdaContext

THROTTLED = "flood"


@dataclass
class Limiter:
    """Refuses THROTTLED and admits every other account; records whom it was asked about."""

    asked: list[str] = field(default_factory=list)

    def admit(self, account_id: str) -> Decision:
        self.asked.append(account_id)
        return Decision(allowed=False, retry_after_seconds=2) if account_id == THROTTLED else Decision(allowed=True)


class Thing(BaseModel):
    name: str


parsed: list[str] = []


def recording_parse(text: str) -> Any:
    parsed.append(text)
    return parse_body(text)


app = APIGatewayRestResolver(json_body_deserializer=recording_parse)
app.use(gate.MIDDLEWARES)
errors.register(app)


def ok() -> Response[str]:
    return Response(status_code=200, body="routed")


@app.get("/accounts/<accountId>/things")
def list_things(
    accountId: str, limit: Annotated[int, Query(ge=1)] = 5, cursor: Annotated[str | None, Query()] = None
) -> Response[str]:
    return ok()


@app.post("/accounts/<accountId>/things")
def create_thing(accountId: str, thing: Annotated[Thing, Body()]) -> Response[str]:
    return ok()


@app.put("/accounts/<accountId>")
@gate.exempt_from_tenant_rate
def put_account(accountId: str, thing: Annotated[Thing, Body()]) -> Response[str]:
    return ok()


@app.get("/status")
def status() -> Response[str]:
    return ok()


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    parsed.clear()
    yield
    metrics.clear_metrics()  # the throttles counted, never flushed


def call(limiter: Limiter, method: str, url: str, body: Any = None, **event: Any) -> tuple[int, dict[str, Any], str]:
    request = {**proxy_event(method, url, 0, body), **event}
    with routing(request, SimpleNamespace(tenant_limiter=limiter)):  # type: ignore[arg-type]
        result = app.resolve(request, FakeLambdaContext(function_name="api"))
    headers = {name: values[-1] for name, values in result["multiValueHeaders"].items()}
    return result["statusCode"], headers, result["body"]


def code(body: str) -> str:
    return str(json.loads(body)["error"]["code"])


# -- the body: its size and encoding, before anything reads it ---------------------------------


def test_body_size_counts_utf8_bytes_and_what_base64_decodes_to() -> None:
    assert gate.body_size(None, False) == 0
    assert gate.body_size("é", False) == 2
    assert gate.body_size("\ud800", False) == 3  # a lone surrogate is measured, and refused later
    assert gate.body_size(base64.b64encode(b"x" * 300).decode(), True) == 300


def test_a_body_is_utf8_unless_base64_of_other_bytes() -> None:
    assert gate.is_utf8(None, True)
    assert gate.is_utf8("\xff as text", False)
    assert gate.is_utf8(base64.b64encode("é".encode()).decode(), True)
    assert not gate.is_utf8(base64.b64encode(b"\xff").decode(), True)
    assert not gate.is_utf8("not base64!", True)


@pytest.mark.parametrize("url", ["/accounts/flood/things", "/accounts/acme/things", "/nowhere"])
def test_a_body_over_64_kib_is_413_before_the_tenant_is_asked_or_the_body_parsed(url: str) -> None:
    limiter = Limiter()
    at_most = json.dumps({"name": "x" * (gate.MAX_BODY_BYTES - 12)})
    assert len(at_most) == gate.MAX_BODY_BYTES
    status, _, body = call(limiter, "POST", url, at_most + " ")
    assert (status, code(body)) == (413, "PayloadTooLarge")
    assert limiter.asked == parsed == []
    status, _, _ = call(limiter, "POST", "/accounts/acme/things", at_most)
    assert status == 200


def test_a_base64_body_that_is_not_utf8_is_400_before_the_tenant_is_asked() -> None:
    limiter = Limiter()
    status, _, body = call(limiter, "POST", "/accounts/flood/things", b'{"name": "\xff"}')
    assert (status, code(body)) == (400, "ValidationError")
    assert "not UTF-8" in json.loads(body)["error"]["message"]
    assert limiter.asked == parsed == []


# -- the tenant's rate: the account the matched route names ------------------------------------


def test_a_throttled_tenant_is_429_with_retry_after_before_its_body_is_parsed() -> None:
    limiter = Limiter()
    status, headers, body = call(limiter, "POST", "/accounts/flood/things", {"name": 5})
    assert (status, code(body), headers["Retry-After"]) == (429, "TenantThrottled", "2")
    assert json.loads(body)["error"]["requestId"] == "test-request"
    assert limiter.asked == [THROTTLED]
    assert parsed == []


@pytest.mark.parametrize(
    ("method", "url", "counted"),
    [
        ("GET", "/accounts/acme/things", ["acme"]),
        ("POST", "/accounts/acme/things", ["acme"]),
        ("PUT", "/accounts/flood", []),  # exempt: an admin can always change a flooding tenant's limits
        ("GET", "/accounts/bad!id/things", []),  # not an account id: validation refuses it
        ("GET", "/accounts/flood/nothing", []),  # a path the API does not have names no account
        ("GET", "/status", []),  # a route that names no account
    ],
)
def test_a_request_counts_against_the_account_its_route_names(method: str, url: str, counted: list[str]) -> None:
    limiter = Limiter()
    call(limiter, method, url, {"name": "x"} if method != "GET" else None)
    assert limiter.asked == counted


# -- query parameters: only those the route declares -------------------------------------------


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/accounts/acme/things?limit=2&cursor=c", 200, None),
        ("/accounts/acme/things?limt=2&b=1&limit=2", 400, "query: unknown parameter(s) 'b', 'limt'"),
        ("/accounts/acme/things?=null", 400, "query: unknown parameter(s) ''"),
        ("/status?limit=2", 400, "query: unknown parameter(s) 'limit'"),
        ("/nowhere?limit=2", 400, "query: unknown parameter(s) 'limit'"),
    ],
)
def test_only_the_query_parameters_a_route_declares_are_taken(url: str, status: int, message: str | None) -> None:
    answer, _, body = call(Limiter(), "GET", url)
    assert answer == status
    if message:
        assert json.loads(body)["error"] == {"code": "ValidationError", "message": message, "requestId": "test-request"}


def test_an_unknown_query_parameter_is_refused_before_validation_applies_defaults() -> None:
    """`?limt=0` is not a typo for a valid page size: without the gate, validation would answer
    the default page; with a bad value it would name the value, not the parameter."""
    _, _, body = call(Limiter(), "GET", "/accounts/acme/things?limt=0&limit=0")
    assert json.loads(body)["error"]["message"] == "query: unknown parameter(s) 'limt'"


def test_a_throttled_tenant_is_429_whatever_its_query() -> None:
    status, _, body = call(Limiter(), "GET", "/accounts/flood/things?limt=2")
    assert (status, code(body)) == (429, "TenantThrottled")
