"""The committed OpenAPI document is the one the handler's models generate."""

from __future__ import annotations

import functools
import json
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from functions.api.json_body import BodyRefused, parse_body
from scripts.openapi import OPENAPI_FILE, render
from tests.handler.conftest import Harness
from tests.support.api_events import ApiResponse

Headers = dict[str, str] | None


def test_committed_openapi_document_is_current() -> None:
    assert OPENAPI_FILE.read_text(encoding="utf-8") == render(), "run `make openapi` and commit docs/openapi.json"


def test_document_describes_the_contract() -> None:
    document = json.loads(render())
    paths = document["paths"]
    assert set(paths) == {
        "/accounts",
        "/accounts/{accountId}",
        "/accounts/{accountId}/resources",
        "/accounts/{accountId}/resources/{resourceId}",
        "/accounts/{accountId}/types",
        "/accounts/{accountId}/types/{resourceType}",
        "/accounts/{accountId}/types/{resourceType}/resources",
        "/accounts/{accountId}/types/{resourceType}/resources/{resourceId}",
        "/accounts/{accountId}/admission",
        "/accounts/{accountId}/types/{resourceType}/admission",
        "/accounts/{accountId}/history",
        "/accounts/{accountId}/types/{resourceType}/history",
        "/accounts/{accountId}/types/{resourceType}/override",
        "/plans",
        "/plans/{planId}",
    }
    # A limit optional beside `plan` keeps its bounds as JSON Schema says them (pydantic wrote `ge`/`le`).
    limit = document["components"]["schemas"]["PutAccountRequest"]["properties"]["limit"]
    assert (limit["type"], limit["minimum"], limit["maximum"]) == ("integer", 0, 2**53 - 1)
    plan = document["components"]["schemas"]["PutAccountRequest"]["properties"]["plan"]
    assert (plan["type"], plan["pattern"]) == ("string", "^[a-z][a-z0-9-]{0,31}$")
    assert set(paths["/plans/{planId}"]) == {"get", "put"}
    assert set(paths["/plans"]) == {"get"}
    assert set(paths["/accounts"]) == {"get"}
    assert {p["name"] for p in paths["/accounts"]["get"]["parameters"]} == {"plan", "limit", "cursor"}
    assert set(paths["/accounts/{accountId}/types/{resourceType}/override"]) == {"delete"}
    assert set(paths["/accounts/{accountId}/resources"]) == {"get", "post"}
    assert set(paths["/accounts/{accountId}/resources/{resourceId}"]) == {"get", "patch", "delete"}
    assert set(paths["/accounts/{accountId}/admission"]) == {"get"}
    assert set(paths["/accounts/{accountId}/types/{resourceType}/history"]) == {"get"}
    assert set(paths["/accounts/{accountId}/types/{resourceType}"]) == {"get", "put", "delete"}
    parameters = {p["name"] for p in paths["/accounts/{accountId}/resources"]["post"]["parameters"]}
    assert "idempotency-key" in {name.lower() for name in parameters}


def test_every_answer_the_api_gives_is_documented_with_its_schema(harness: Harness) -> None:
    """The answers of a run through the contract, each looked up in the document: a client generated
    from it knows every status it can get, and every error's body is the envelope."""
    document = json.loads(render())
    api = harness.api
    given: list[tuple[str, str, int]] = []

    def answer(
        method: str, template: str, url: str, body: object = None, headers: dict[str, str] | None = None
    ) -> dict:
        response = api.request(method, url, body, headers)
        given.append((method.lower(), template, response.status))
        return response.json() or {}

    account, resources = "/accounts/{accountId}", "/accounts/{accountId}/resources"
    resource = "/accounts/{accountId}/resources/{resourceId}"
    answer("PUT", account, "/accounts/acme", {"limit": 1})
    answer("PUT", account, "/accounts/acme", {"limit": "x"})
    answer("GET", account, "/accounts/nobody")
    created = answer("POST", resources, "/accounts/acme/resources", {"name": "a"}, {"Idempotency-Key": "k"})
    answer("POST", resources, "/accounts/acme/resources", {"name": "a"}, {"Idempotency-Key": "k"})
    answer("POST", resources, "/accounts/acme/resources", {"name": "b"}, {"Idempotency-Key": "k"})
    answer("POST", resources, "/accounts/acme/resources", {"name": "c"})
    answer("POST", resources, "/accounts/acme/resources", {"name": "x", "attributes": {"b": "y" * 70000}})
    answer("GET", resources, "/accounts/acme/resources")
    answer("GET", resource, f"/accounts/acme/resources/{created['resourceId']}")
    answer("DELETE", resource, f"/accounts/acme/resources/{created['resourceId']}")
    answer("DELETE", resource, f"/accounts/acme/resources/{created['resourceId']}")
    types, a_type = "/accounts/{accountId}/types", "/accounts/{accountId}/types/{resourceType}"
    typed = f"{a_type}/resources"
    answer("PUT", a_type, "/accounts/acme/types/seats", {"limit": 1})
    answer("PUT", a_type, "/accounts/acme/types/seats", {"limit": 2}, {"If-Match": '"9"'})
    answer("PUT", a_type, "/accounts/acme/types/Seats", {"limit": 1})
    for number in range(50):
        answer("PUT", a_type, f"/accounts/full/types/t{number}", {"limit": 1})
    answer("PUT", a_type, "/accounts/full/types/seats", {"limit": 1})
    answer("GET", a_type, "/accounts/acme/types/seats")
    answer("GET", a_type, "/accounts/acme/types/projects")
    answer("GET", types, "/accounts/acme/types")
    answer("GET", types, "/accounts/nobody/types")
    seat = answer("POST", typed, "/accounts/acme/types/seats/resources", {"name": "a"}, {"Idempotency-Key": "k"})
    answer("POST", typed, "/accounts/acme/types/seats/resources", {"name": "a"}, {"Idempotency-Key": "k"})
    answer("POST", typed, "/accounts/acme/types/seats/resources", {"name": "b"}, {"Idempotency-Key": "k"})
    answer("POST", typed, "/accounts/acme/types/seats/resources", {"name": "c"})
    answer("POST", typed, "/accounts/acme/types/seats/resources", {"name": "x", "attributes": {"b": "y" * 70000}})
    answer("POST", typed, "/accounts/acme/types/projects/resources", {"name": "c"})
    answer("GET", typed, "/accounts/acme/types/seats/resources")
    answer("GET", typed, "/accounts/acme/types/projects/resources")
    for _ in range(2):
        answer("GET", f"{typed}/{{resourceId}}", f"/accounts/acme/types/seats/resources/{seat['resourceId']}")
        answer("DELETE", f"{typed}/{{resourceId}}", f"/accounts/acme/types/seats/resources/{seat['resourceId']}")
    plan, plans, override = "/plans/{planId}", "/plans", f"{a_type}/override"
    answer("PUT", plan, "/plans/pro", {"quotas": {"seats": {"limit": 5}}})
    answer("PUT", plan, "/plans/pro", {"quotas": {"default": {"limit": 5}}})
    answer("PUT", plan, "/plans/pro", {"quotas": {}}, {"If-Match": '"9"'})
    answer("GET", plan, "/plans/pro")
    answer("GET", plan, "/plans/nope")
    answer("GET", plans, "/plans")
    answer("GET", plans, "/plans?cursor=abc")
    answer("PUT", account, "/accounts/planned", {"plan": "pro"})
    answer("PUT", account, "/accounts/planned", {"plan": "nope"})
    answer("PUT", a_type, "/accounts/planned/types/seats", {"limit": 9})
    answer("DELETE", override, "/accounts/planned/types/seats/override")
    answer("DELETE", override, "/accounts/planned/types/seats/override")
    answer("DELETE", override, "/accounts/planned/types/nope/override")
    answer("GET", "/accounts", "/accounts?plan=pro&limit=1")
    answer("GET", "/accounts", "/accounts?cursor=abc")
    assert {(template, status) for _, template, status in given if template == "/accounts"} == {
        ("/accounts", 200),
        ("/accounts", 400),
    }
    assert {status for _, _, status in given} == {200, 201, 204, 400, 404, 409, 412, 413, 422}
    assert {(template, status) for _, template, status in given if template in (plan, plans, override)} == {
        (plan, 200),
        (plan, 400),
        (plan, 404),
        (plan, 412),
        (plans, 200),
        (plans, 400),
        (override, 200),
        (override, 404),
    }
    assert {(template, status) for _, template, status in given if template.startswith(types)} >= {
        (a_type, 409),
        (a_type, 412),
        (typed, 404),
        (typed, 409),
        (typed, 422),
        (f"{typed}/{{resourceId}}", 404),
    }
    for method, template, status in given:
        documented = document["paths"][template][method]["responses"]
        assert str(status) in documented, (method, template, status)
        if status >= 400:
            schema = documented[str(status)]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, (method, template, status)
    assert "content" not in document["paths"][resource]["delete"]["responses"]["204"]
    assert "422" not in document["paths"][account]["get"]["responses"]  # validation errors are 400s


def operation(document: dict[str, Any], method: str, template: str) -> dict[str, Any]:
    found: dict[str, Any] = document["paths"][template][method.lower()]
    return found


def parameter_schema(document: dict[str, Any], method: str, template: str, name: str) -> dict[str, Any]:
    parameters = operation(document, method, template)["parameters"]
    found: dict[str, Any] = next(p["schema"] for p in parameters if p["name"].lower() == name.lower())
    return found


def allows(schema: dict[str, Any], value: str | None) -> bool:
    return Draft202012Validator(schema).is_valid(value)


def test_every_format_the_api_enforces_on_a_parameter_is_declared(harness: Harness) -> None:
    """A value outside the document's formats is refused, and the API's own cursors are inside them:
    a generated client (or a fuzzer) sends what the API can take. No parameter is nullable: an
    optional one is left out, where a generator would send null as the text `null`, refused."""
    document = json.loads(render())
    api = harness.api
    api.put_account("acme", 5)
    for index in range(3):
        api.create("acme", f"r{index}")
    cursor = api.request("GET", "/accounts/acme/resources?limit=1").json()["nextCursor"]
    cursor_schema = parameter_schema(document, "GET", "/accounts/{accountId}/resources", "cursor")
    assert allows(cursor_schema, cursor)
    for malformed in ("ß", "a b", "a=b", "a.b", ""):
        assert not allows(cursor_schema, malformed), malformed
        answer = api.request("GET", f"/accounts/acme/resources?{urlencode({'cursor': malformed})}")
        assert answer.status == 400, (malformed, answer.text)

    if_match = parameter_schema(document, "PUT", "/accounts/{accountId}", "If-Match")
    etag = api.request("GET", "/accounts/acme").headers["ETag"]
    assert allows(if_match, etag)
    assert allows(if_match, "*")
    assert not allows(if_match, "null")
    assert api.request("PUT", "/accounts/acme", {"limit": 5}, {"If-Match": "null"}).status == 400

    for path, operations in document["paths"].items():
        for method, described in operations.items():
            for parameter in described.get("parameters", []):
                assert not allows(parameter["schema"], None), (method, path, parameter["name"])


@functools.cache
def if_match_schema() -> dict[str, Any]:
    """The document's If-Match schema: rendered once, not for each example (a tenth of a second each)."""
    return parameter_schema(json.loads(render()), "PUT", "/accounts/{accountId}", "If-Match")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_if_match_the_document_takes_is_taken_as_http_carries_it(harness: Harness, data: st.DataObject) -> None:
    """A header the document's If-Match schema allows is read (200, or 412 for a version the
    account is not at), never refused as malformed: sent over HTTP, it arrives as its UTF-8 bytes
    read as ISO-8859-1 (what servers do with a header's bytes). The pattern's `\\s` took `\\u3000`,
    three characters on arrival (and past 1,024 of them once repeated), and its tags a comma."""
    schema = if_match_schema()
    header = data.draw(
        st.from_regex(schema["pattern"], fullmatch=True).filter(lambda value: len(value) <= schema["maxLength"])
    )
    assert allows(schema, header)
    if harness.api.request("GET", "/accounts/im").status == 404:
        assert harness.api.put_account("im", 5).status == 200
    arrived = header.encode("utf-8").decode("iso-8859-1").strip(" \t")  # a server strips OWS
    answer = harness.api.request("PUT", "/accounts/im", {"limit": 5}, {"If-Match": arrived})
    assert answer.status in (200, 412), (header, answer.text)


def resolve(expression: str, request_path: dict[str, str], answer: ApiResponse) -> str:
    """A link's runtime expression (OpenAPI 3.1, "Runtime Expressions"): the forms this API uses."""
    if expression.startswith("$request.path."):
        return request_path[expression.removeprefix("$request.path.")]
    if expression.startswith("$response.body#/"):  # a JSON pointer (RFC 6901) into the answer
        found = answer.json()
        for token in expression.removeprefix("$response.body#/").split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            found = found[int(token)] if isinstance(found, list) else found[token]
        return str(found)
    if expression.startswith("$response.header."):
        return answer.headers[expression.removeprefix("$response.header.")]
    raise AssertionError(f"unexpected link expression {expression}")


@pytest.mark.engine
def test_links_lead_from_what_an_answer_made_to_what_a_client_does_next(harness: Harness) -> None:
    """A client generated from the document (or a fuzzer's stateful phase) follows these links: from
    a PUT of an account to its reads and to a create in it, from a read of it to a PUT on the
    condition that it is as read (and to its periods' history, a periodic quota's), from a create to
    the resource's read, resize and delete and the account's next steps, from a type's PUT to the
    removal of its override, from a read of an account (a type) to its deletion, and between a
    plan's PUT, its read and the list. Each link, followed against the API, reaches what it names
    (2xx)."""
    document = json.loads(render())
    by_id = {
        described["operationId"]: (method.upper(), path)
        for path, operations in document["paths"].items()
        for method, described in operations.items()
    }
    api = harness.api

    def follow(method: str, template: str, status: int, request_path: dict[str, str], answer: ApiResponse) -> set:
        assert answer.status == status, answer.text
        links = operation(document, method, template)["responses"][str(status)].get("links", {})
        reached = set()
        for link in sorted(links.values(), key=lambda link: by_id[link["operationId"]][0] == "DELETE"):
            target_method, target = by_id[link["operationId"]]
            values = {
                name: resolve(expression, request_path, answer) for name, expression in link["parameters"].items()
            }
            path = {name: value for name, value in values.items() if "." not in name}
            headers = {
                name.removeprefix("header."): value for name, value in values.items() if name.startswith("header.")
            }
            put = {"quotas": {"seats": {"limit": 3}}} if target.startswith("/plans") else {"limit": 5}
            payload = {"POST": {"name": "linked"}, "PUT": put, "PATCH": {"amount": 1}}.get(target_method)
            followed = api.request(target_method, target.format(**path), payload, headers)
            assert 200 <= followed.status < 300, (link, followed.status, followed.text)
            reached.add((target_method, target))
        return reached

    account, resources = "/accounts/{accountId}", "/accounts/{accountId}/resources"
    resource = "/accounts/{accountId}/resources/{resourceId}"
    where = {"accountId": "linked"}
    reads = {("GET", account), ("GET", resources)}
    assert follow("PUT", account, 200, where, api.put_account("linked", 5)) == {*reads, ("POST", resources)}
    # A read leads to the periods' history too, which a periodic quota answers (a holding's is 409).
    billed = {"accountId": "billed"}
    assert api.request("PUT", "/accounts/billed", {"limit": 5, "period": "month"}).status == 200
    # And to its deletion: this one is read, then deleted (202), and another takes its place.
    assert api.request("PUT", "/accounts/read-then-deleted", {"limit": 5, "period": "month"}).status == 200
    assert follow(
        "GET", account, 200, {"accountId": "read-then-deleted"}, api.request("GET", "/accounts/read-then-deleted")
    ) == {
        ("PUT", account),
        ("GET", f"{account}/admission"),
        ("GET", f"{account}/types"),
        ("GET", f"{account}/history"),
        ("DELETE", account),
    }
    assert api.request("GET", "/accounts/read-then-deleted").status == 404
    # A create leads to the resource's read, resize and delete, and to its account's reads, its
    # admission, its history (a periodic quota's) and its PUT.
    created = api.create("billed", "r1")
    on_it = {("GET", resource), ("PATCH", resource), ("DELETE", resource)}
    account_next = {
        *reads,
        ("GET", f"{account}/admission"),
        ("GET", f"{account}/types"),
        ("GET", f"{account}/history"),
        ("PUT", account),
    }
    assert follow("POST", resources, 201, billed, created) == {*account_next, *on_it}
    assert api.create("billed", "r2", key="k2").status == 201
    replayed = api.create("billed", "r2", key="k2")  # a replay answers the resource it created
    assert follow("POST", resources, 200, billed, replayed) == {*account_next, *on_it}

    # The same on a type's routes, which name the type too.
    a_type = "/accounts/{accountId}/types/{resourceType}"
    typed, typed_resource = f"{a_type}/resources", f"{a_type}/resources/{{resourceId}}"
    where = {"accountId": "linked", "resourceType": "seats"}
    reads = {("GET", a_type), ("GET", typed)}
    # On an account whose plan gives the type, its PUT is an override, which can be removed.
    assert api.request("PUT", "/plans/linking", {"quotas": {"seats": {"limit": 3}}}).status == 200
    assert api.request("PUT", "/accounts/linked", {"plan": "linking"}).status == 200
    override = api.put_type("linked", "seats", 5)
    assert follow("PUT", a_type, 200, where, override) == {*reads, ("POST", typed), ("DELETE", f"{a_type}/override")}
    builds = {"accountId": "linked", "resourceType": "builds"}
    assert api.request("PUT", "/accounts/linked/types/builds", {"limit": 5, "period": "day"}).status == 200
    # A read leads to the type's deletion too (an empty type of the account's own answers 200).
    assert follow("GET", a_type, 200, builds, api.request("GET", "/accounts/linked/types/builds")) == {
        ("PUT", a_type),
        ("GET", f"{a_type}/admission"),
        ("GET", f"{a_type}/history"),
        ("DELETE", a_type),
    }
    assert api.request("GET", "/accounts/linked/types/builds").status == 404
    assert api.request("PUT", "/accounts/linked/types/builds", {"limit": 5, "period": "day"}).status == 200
    created = api.create("linked", "b1", resource_type="builds")
    on_it = {("GET", typed_resource), ("PATCH", typed_resource), ("DELETE", typed_resource)}
    type_next = {*reads, ("GET", f"{a_type}/admission"), ("GET", f"{a_type}/history"), ("PUT", a_type)}
    assert follow("POST", typed, 201, builds, created) == {*type_next, *on_it}

    # A plan's PUT leads to its read, its read to a PUT on the condition that it is as read, and a
    # page of the list to its first plan's read and PUT.
    plan, named = "/plans/{planId}", {"planId": "linking"}
    put_plan = api.request("PUT", "/plans/linking", {"quotas": {"seats": {"limit": 4}}})
    assert follow("PUT", plan, 200, named, put_plan) == {("GET", plan)}
    assert follow("GET", plan, 200, named, api.request("GET", "/plans/linking")) == {("PUT", plan)}
    assert follow("GET", "/plans", 200, {}, api.request("GET", "/plans")) == {("GET", plan), ("PUT", plan)}

    # A create where the account (or the type) does not exist leads to its PUT: a fuzzer's stateful
    # phase starts from creates in accounts it makes up, and reached nothing a create makes.
    missing = api.create("nobody", "r")
    assert follow("POST", resources, 404, {"accountId": "nobody"}, missing) == {("PUT", account)}
    assert api.create("nobody", "r").status == 201
    where = {"accountId": "nobody", "resourceType": "seats"}
    missing = api.create("nobody", "s", resource_type="seats")
    assert follow("POST", typed, 404, where, missing) == {("PUT", a_type)}
    assert api.create("nobody", "s", resource_type="seats").status == 201


GATEWAY_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")  # what API Gateway's ANY takes


def test_every_method_a_documented_path_does_not_take_is_405_with_the_documented_ones(harness: Harness) -> None:
    document = json.loads(render())
    for template, operations in document["paths"].items():
        path = template.format(accountId="acme", resourceType="seats", resourceId="r1", planId="pro")
        documented = sorted(method.upper() for method in operations)
        for method in sorted(set(GATEWAY_METHODS) - set(documented)):
            answer = harness.api.request(method, path)
            assert answer.status == 405, (method, path, answer.text)
            assert answer.headers["Allow"] == ", ".join(documented)
    assert harness.api.request("GET", "/accounts/acme/nothing").status == 404  # no such path


NUMBER_RULES = ("number range", "digits", "64-bit double")


def test_every_number_the_document_allows_in_attributes_the_api_takes() -> None:
    """schemathesis drew numbers outside DynamoDB's range (and integers of 39 digits) from the
    document's `attributes`, which the API refuses (400): the document now says the range. What
    it cannot say (nesting past 32 levels, a lone surrogate) is left to the API's 400, and to
    tests/integration/test_contract_fuzz.py's `outside_json_rules`."""
    import requests
    import schemathesis

    schema = schemathesis.openapi.from_path(OPENAPI_FILE)
    create = next(
        result.ok()
        for result in schema.get_all_operations()
        if result.ok().label == "POST /accounts/{accountId}/resources"
    )

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=create.as_strategy())
    def check(case: schemathesis.Case) -> None:
        sent = case.as_transport_kwargs(base_url="http://api.invalid")
        body = requests.Request("POST", "http://api.invalid", json=sent["json"]).prepare().body
        refusal = ""
        try:
            parse_body(body.decode() if isinstance(body, bytes) else str(body))
        except BodyRefused as refused:
            refusal = refused.msg
        assert not any(rule in refusal for rule in NUMBER_RULES), refusal

    check()
