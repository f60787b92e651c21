"""Hostile but valid-looking bodies through the real api handler: refused before any write (400
`ValidationError`, naming the place), or accepted and read back exactly. Never a 5xx.

The rules are docs/api.md ("Request bodies") and functions/api/json_body.py; the byte-bounded list page is
docs/security.md "Answers within Lambda's limits"."""

from __future__ import annotations

import itertools
import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from functions.adapters.resources import resource_item
from functions.core.model import Quota, Resource
from tests.handler.conftest import Harness
from tests.support.api_events import ApiResponse, proxy_event
from tests.support.lambda_context import FakeLambdaContext
from tests.support.truth import read_truth

RESOURCES = "/accounts/acme/resources"
# Lambda's synchronous response limit: the proxy response as the runtime writes it (Lambda quotas).
LAMBDA_RESPONSE_BYTES = 6_291_456


def refused_before_any_write(harness: Harness, method: str, url: str, body: str, place: str | None) -> str:
    """Send `body` (JSON text, as the client wrote it); assert a 400 ValidationError naming `place`
    (if given) and an unchanged table. Returns the message."""
    before = read_truth(harness.backend.dynamodb, harness.backend.table)
    response = harness.api.request(method, url, body)
    assert response.status == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "ValidationError"
    assert place is None or error["message"].startswith(f"{place}: "), error["message"]
    assert read_truth(harness.backend.dynamodb, harness.backend.table) == before
    return str(error["message"])


@pytest.mark.parametrize(
    ("body", "place"),
    [
        ('{"name": "s1", "attributes": {"k": "\\ud800"}}', "attributes.k"),
        ('{"name": "s1", "attributes": {"k": ["ok", "\\udc00"]}}', "attributes.k.1"),
        ('{"name": "s1", "attributes": {"\\ud800": 1}}', "attributes.\\ud800"),
        ('{"name": "s\\ud800"}', "name"),
        ('{"name": "s1", "attributes": {"k": "\ud800"}}', "attributes.k"),  # raw in the event's string
    ],
)
def test_a_lone_surrogate_is_refused_before_any_write(harness: Harness, body: str, place: str) -> None:
    """It was written and counted, then answered 502: the response could not be serialized."""
    harness.api.put_account("acme", 5)
    message = refused_before_any_write(harness, "POST", RESOURCES, body, place)
    assert "surrogate" in message


@pytest.mark.parametrize(
    ("method", "url", "body", "place"),
    [
        ("POST", RESOURCES, '{"name": "x", "attributes": {"k": NaN}}', "attributes.k"),
        ("POST", RESOURCES, '{"name": "x", "attributes": {"k": [Infinity]}}', "attributes.k.0"),
        ("POST", RESOURCES, '{"name": "x", "attributes": {"k": -Infinity}}', "attributes.k"),
        ("POST", RESOURCES, '{"name": "x", "attributes": {"k": 1e309}}', "attributes.k"),
        ("PUT", "/accounts/acme", '{"limit": NaN}', "limit"),
        ("PUT", "/accounts/acme", '{"limit": 1e400}', "limit"),
        ("PUT", "/accounts/acme", '{"limit": 5, "thresholds": [50, NaN]}', "thresholds.1"),
        ("PUT", "/accounts/acme", '{"limit": 5, "thresholds": [1e400]}', "thresholds.0"),
    ],
)
def test_nan_and_infinities_are_refused_not_stored_as_null(
    harness: Harness, method: str, url: str, body: str, place: str
) -> None:
    harness.api.put_account("acme", 5)
    refused_before_any_write(harness, method, url, body, place)


@pytest.mark.parametrize(
    ("method", "url", "body", "place"),
    [
        ("POST", RESOURCES, '{"name": "a", "name": "b"}', "name"),
        ("POST", RESOURCES, '{"name": "x", "attributes": {"k": 1, "k": 2}}', "attributes.k"),
        ("POST", RESOURCES, '{"name": "x", "attributes": {}, "attributes": {"k": 1}}', "attributes"),
        ("PUT", "/accounts/acme", '{"limit": 9, "limit": 1}', "limit"),
        ("PUT", "/accounts/acme", '{"limit": 9, "thresholds": [50], "thresholds": [60]}', "thresholds"),
    ],
)
def test_duplicate_names_are_refused_rather_than_one_value_dropped(
    harness: Harness, method: str, url: str, body: str, place: str
) -> None:
    harness.api.put_account("acme", 5)
    refused_before_any_write(harness, method, url, body, place)


def attributes_nested(levels: int) -> str:
    """A create whose deepest container is at `levels`: the body is level 1, `attributes` level 2."""
    lists = levels - 2
    return '{"name": "deep", "attributes": {"a": ' + "[" * lists + "]" * lists + "}}"


@pytest.mark.parametrize("levels", [33, 300, 1_000, 20_000])
def test_nesting_deeper_than_32_levels_is_refused(harness: Harness, levels: int) -> None:
    harness.api.put_account("acme", 5)
    message = refused_before_any_write(harness, "POST", RESOURCES, attributes_nested(levels), None)
    assert message.endswith("nested deeper than 32 levels")


def test_nesting_of_32_levels_is_kept_and_reads_back(harness: Harness) -> None:
    harness.api.put_account("acme", 5)
    body = attributes_nested(32)
    created = harness.api.request("POST", RESOURCES, body)
    assert created.status == 201, created.text
    assert_reads_back(harness, created, body)


@pytest.mark.parametrize(
    "number",
    [
        "9" * 5_000,  # Python's own limit is 4,300 digits: it raised ValueError (502)
        "123456789012345678901234567890123456789",  # 39 digits
        "1E126",
        "1e-131",
        "0.30000000000000001",
    ],
)
def test_numbers_the_service_cannot_hold_exactly_are_refused(harness: Harness, number: str) -> None:
    harness.api.put_account("acme", 5)
    body = '{"name": "n", "attributes": {"n": ' + number + "}}"
    refused_before_any_write(harness, "POST", RESOURCES, body, "attributes.n")


def test_numbers_held_exactly_read_back_exactly(harness: Harness) -> None:
    harness.api.put_account("acme", 5)
    numbers = ["12345678901234567890123456789012345678", "-1", "0.1", "1.5e3", "1e-130", "-9.99999999999999e125", "7.0"]
    body = '{"name": "n", "attributes": {' + ", ".join(f'"n{i}": {n}' for i, n in enumerate(numbers)) + "}}"
    created = harness.api.request("POST", RESOURCES, body)
    assert created.status == 201, created.text
    assert_reads_back(harness, created, body)
    assert created.json()["attributes"]["n0"] == 12345678901234567890123456789012345678  # an integer, exact


# -- reads of what older versions stored -------------------------------------------------------


def store_directly(harness: Harness, resource_id: str, attributes: Any, name: str = "old") -> None:
    """A resource item as versions before the body rules wrote it (json.dumps of what they took)."""
    resource = Resource(Quota("acme"), resource_id, name, attributes, "2026-11-01T00:00:00.000Z", "f", "t")
    harness.backend.dynamodb.put_item(TableName=harness.backend.table, Item=resource_item(resource))


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def test_stored_data_the_rules_now_refuse_still_reads_as_valid_json(harness: Harness) -> None:
    """A lone surrogate stored before broke GET of itself and every list page holding it (502)."""
    harness.api.put_account("acme", 5)
    store_directly(harness, "surrogate", {"k": "\ud800", "\udc00": ["x\udfff"]})
    store_directly(harness, "deep", deep(900))  # about the deepest an older version could write
    store_directly(harness, "nan", {"n": float("nan"), "i": float("-inf")})

    for resource_id, expected in [
        ("surrogate", {"k": "\ud800", "\udc00": ["x\udfff"]}),
        ("deep", deep(900)),
        ("nan", {"n": None, "i": None}),  # as those versions answered them
    ]:
        got = harness.api.request("GET", f"{RESOURCES}/{resource_id}")
        assert got.status == 200, got.text
        got.text.encode("utf-8")  # sendable: the surrogates are escaped
        assert got.json()["attributes"] == expected
    listed = harness.api.request("GET", RESOURCES)
    assert listed.status == 200, listed.text
    assert {item["resourceId"] for item in listed.json()["items"]} == {"surrogate", "deep", "nan"}


# -- list pages within Lambda's response limit -------------------------------------------------


def call(harness: Harness, method: str, url: str) -> tuple[dict[str, Any], int]:
    """The handler's proxy response, and its size as the python3.12 runtime writes it (UTF-8 JSON,
    non-ASCII as is: awslambdaric's marshaller)."""
    from functions.api.handler import handler as api_handler  # after the session's environment

    event = proxy_event(method, url, harness.clock.epoch_ms())
    result = api_handler(event, FakeLambdaContext(function_name="api"), wiring=harness.wiring)
    return result, len(json.dumps(result, ensure_ascii=False).encode())


def test_a_list_page_stops_before_lambdas_response_limit_and_the_rest_follows(harness: Harness) -> None:
    """50 resources whose attributes double when escaped twice (`"` is `\\"` in the body, `\\\\\\"`
    in the proxy JSON): a full page of them was 6.6 MB, which Lambda refuses (502)."""
    harness.api.put_account("acme", 60)
    quotes = '"' * 32_600  # 65,2xx bytes as JSON text: just under the 64 KiB body limit
    created = []
    for index in range(50):
        response = harness.api.create("acme", f"q{index}", q=quotes)
        assert response.status == 201, response.text
        created.append(response.json()["resourceId"])

    first, size = call(harness, "GET", f"{RESOURCES}?limit=50")
    assert first["statusCode"] == 200
    assert size <= LAMBDA_RESPONSE_BYTES
    page = json.loads(first["body"])
    assert 40 <= len(page["items"]) < 50  # shorter, not tiny
    assert all(item["attributes"] == {"q": quotes} for item in page["items"])

    second, _ = call(harness, "GET", f"{RESOURCES}?limit=50&cursor={page['nextCursor']}")
    rest = json.loads(second["body"])
    assert rest["nextCursor"] is None
    seen = [item["resourceId"] for item in page["items"] + rest["items"]]
    assert len(seen) == len(set(seen)) == 50  # nothing repeated, nothing skipped
    assert set(seen) == set(created)


def test_pages_that_fit_are_unchanged(harness: Harness) -> None:
    harness.api.put_account("acme", 10)
    ids = {harness.api.create("acme", f"r{i}", size=i).json()["resourceId"] for i in range(5)}
    page = harness.api.request("GET", f"{RESOURCES}?limit=5").json()
    assert {item["resourceId"] for item in page["items"]} == ids


# -- the property: refused with nothing written, or read back exactly ----------------------------


def canonical(value: Any) -> Any:
    """A JSON value compared as JSON means it: numbers by value (Decimal equality), true never equal
    to 1, an object as its pairs sorted by name (a duplicate name shows twice)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, Decimal):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", [canonical(item) for item in value])
    assert isinstance(value, tuple)  # the object_pairs_hook's pairs
    return ("object", [(name, canonical(item)) for name, item in sorted(value, key=lambda pair: pair[0])])


def exact_tree(text: str) -> Any:
    """A JSON text as the standard library reads it with no value dropped or rounded."""
    return json.loads(text, parse_float=Decimal, parse_int=Decimal, object_pairs_hook=tuple)


def assert_reads_back(harness: Harness, created: ApiResponse, sent: str) -> None:
    """The create's answer, GET and the list page all hold the name and attributes `sent`."""
    body = created.json()
    url = f"/accounts/{body['accountId']}/resources"
    read = harness.api.request("GET", f"{url}/{body['resourceId']}")
    listed = harness.api.request("GET", f"{url}?limit=100")
    assert read.status == listed.status == 200, (read.text, listed.text)
    items = dict(exact_tree(listed.text))["items"]
    [in_list] = [item for item in items if dict(item)["resourceId"] == body["resourceId"]]
    wanted = dict(exact_tree(sent))
    for answer in (dict(exact_tree(created.text)), dict(exact_tree(read.text)), dict(in_list)):
        for field in ("name", "attributes"):
            assert canonical(answer[field]) == canonical(wanted.get(field, ())), field


SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
TEXT = st.one_of(
    st.text(max_size=8),
    st.text(st.characters(exclude_categories=()), max_size=8),  # control characters, surrogates
    st.tuples(st.text(max_size=3), SURROGATES, st.text(max_size=3)).map("".join),
    st.sampled_from(['"', "\\", "\x00", "\u2028", "\U0001f600", "é"]),
)
# Every way a client may write a string: escaped (\\ud800) or raw in the event's text.
STRING = st.tuples(TEXT, st.booleans()).map(lambda drawn: json.dumps(drawn[0], ensure_ascii=drawn[1]))
NAME = st.one_of(st.sampled_from(['"a"', '"b"']), STRING)  # two names often: duplicates
NUMBER = st.one_of(
    st.integers().map(str),
    st.integers(-(10**45), 10**45).map(str),
    st.floats().map(lambda f: json.dumps(f)),  # NaN, Infinity, -Infinity among them
    st.from_regex(r"-?(0|[1-9][0-9]{0,44})(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.sampled_from(["9" * 5_000, "1e309", "1e-131", "0.30000000000000001", "-0", "-0.0", "1E-130"]),
)
SCALAR = st.one_of(st.sampled_from(["null", "true", "false"]), NUMBER, STRING)


def containers(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(children, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(NAME, children), max_size=4).map(
            lambda pairs: "{" + ",".join(f"{name}:{value}" for name, value in pairs) + "}"
        ),
    )


VALUE = st.recursive(SCALAR, containers, max_leaves=10)
DEEP = st.integers(1, 1_200).map(lambda levels: "[" * levels + "0" + "]" * levels)
ATTRIBUTES = st.one_of(
    containers(VALUE),
    st.tuples(NAME, DEEP).map(lambda pair: "{" + f"{pair[0]}:{pair[1]}" + "}"),
    VALUE,  # not an object: refused by the model
)
# JSON a careful client sends: most of it is taken (a float below 1E-130 is not).
PLAIN_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**38) + 1, 10**38 - 1)
    | st.floats(allow_nan=False, min_value=-1e125, max_value=1e125)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=12,
)
PLAIN_BODY = st.tuples(
    st.fixed_dictionaries(
        {"name": st.text(min_size=1, max_size=8)},
        optional={"attributes": st.dictionaries(st.text(max_size=4), PLAIN_VALUE, max_size=4)},
    ),
    st.booleans(),
).map(lambda drawn: json.dumps(drawn[0], ensure_ascii=drawn[1]))
CREATE_BODY = st.one_of(
    PLAIN_BODY,
    st.tuples(STRING, ATTRIBUTES).map(lambda drawn: '{"name":' + drawn[0] + ',"attributes":' + drawn[1] + "}"),
    VALUE,  # any JSON at all
    st.text(max_size=40),  # not JSON
)
account_numbers = itertools.count()


@pytest.mark.slow
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=CREATE_BODY)
def test_any_create_body_is_refused_with_nothing_written_or_reads_back_exactly(harness: Harness, body: str) -> None:
    account = f"p{next(account_numbers)}"  # one per example: the system is the test's, shared by its examples
    assert harness.api.put_account(account, 5).status == 200
    before = read_truth(harness.backend.dynamodb, harness.backend.table)
    response = harness.api.request("POST", f"/accounts/{account}/resources", body)
    assert response.status < 500, response.text
    event(f"answered {response.status}")
    if response.status >= 400:
        assert response.json()["error"]["code"]
        assert read_truth(harness.backend.dynamodb, harness.backend.table) == before
        return
    assert response.status == 201, response.text
    assert_reads_back(harness, response, body)


# -- the property: any Content-Type, any body, on every route that takes one ---------------------

# What a client may say its body is: the types Powertools parses its own way (a form, multipart,
# with and without a boundary), others, and any text at all. The API reads every body as JSON.
CONTENT_TYPE = st.one_of(
    st.sampled_from(
        [
            "multipart/form-data",
            "multipart/form-data; boundary=",
            'multipart/form-data; boundary=""',
            "multipart/form-data; boundary=b",
            "multipart/mixed; boundary=b",
            "application/x-www-form-urlencoded",
            "application/x-www-form-urlencoded; charset=latin-1",
            "application/json; charset=utf-16",
            "application/xml",
            "text/plain",
            "*/*",
            "",
        ]
    ),
    st.from_regex(r"[a-z*+-]{0,12}/[a-z0-9.*+-]{0,12}(; ?[a-z]{0,9}=[^;]{0,12}){0,3}", fullmatch=True),
    st.text(max_size=30),
)
PART = '--{0}\r\nContent-Disposition: form-data; name="limit"\r\n\r\n{1}\r\n--{0}--\r\n'
MULTIPART = st.tuples(st.sampled_from(["b", "", "x y"]), st.text(max_size=12)).map(lambda drawn: PART.format(*drawn))
ANY_BODY = st.one_of(
    st.none(),
    st.just(""),
    st.sampled_from(['{"limit": 3}', '{"name": "x"}', "limit=3", "name=x&attributes=1", "{}", "null"]),
    MULTIPART,
    st.text(max_size=40),
    st.binary(max_size=40),  # sent base64-encoded, as API Gateway passes a binary body
)
ROUTES_WITH_A_BODY = [
    "PUT {a}",
    "PUT {a}/types/seats",
    "POST {a}/resources",
    "POST {a}/types/seats/resources",
    "PUT /plans/hostile",
]


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(route=st.sampled_from(ROUTES_WITH_A_BODY), content_type=CONTENT_TYPE, body=ANY_BODY)
def test_any_content_type_and_body_is_answered_in_the_envelope_never_a_5xx(
    harness: Harness, route: str, content_type: str, body: str | bytes | None
) -> None:
    """An empty multipart body without a boundary was a 503 (Powertools raised ValueError), an empty
    body of a type Powertools does not read a 415 outside the envelope."""
    if harness.api.request("GET", "/accounts/typed/types/seats").status == 404:  # once: the examples share it
        assert harness.api.put_type("typed", "seats", 1000).status == 200
    method, url = route.format(a="/accounts/typed").split(" ")
    before = read_truth(harness.backend.dynamodb, harness.backend.table), plans(harness)
    response = harness.api.request(method, url, body, {"Content-Type": content_type})
    event(f"answered {response.status}")
    assert response.status < 500, response.text
    assert response.headers["Content-Type"] == "application/json", response.headers
    answer = response.json()
    if response.status < 400:
        return
    assert set(answer) == {"error"}, answer
    assert {"code", "message"} <= set(answer["error"]), answer
    assert (read_truth(harness.backend.dynamodb, harness.backend.table), plans(harness)) == before


def plans(harness: Harness) -> list[dict[str, Any]]:
    """Every plan, as the API answers them (read_truth reads quotas only)."""
    return list(harness.api.request("GET", "/plans?limit=100").json()["items"])


@pytest.mark.parametrize(
    ("method", "url", "body", "place"),
    [
        ("PUT", "/plans/pro", '{"quotas": {"seats": {"limit": NaN}}}', "quotas.seats.limit"),
        ("PUT", "/plans/pro", '{"quotas": {"seats": {"limit": 1e400}}}', "quotas.seats.limit"),
        ("PUT", "/plans/pro", '{"quotas": {"seats": {"limit": 1}, "seats": {"limit": 2}}}', "quotas.seats"),
        (
            "PUT",
            "/plans/pro",
            '{"quotas": {"seats": {"limit": 5, "thresholds": [50, NaN]}}}',
            "quotas.seats.thresholds.1",
        ),
        ("PUT", "/plans/pro", '{"quotas": {"se\\ud800ts": {"limit": 1}}}', None),
        ("PUT", "/accounts/acme", '{"plan": "pro", "plan": "free"}', "plan"),
        ("PUT", "/accounts/acme", '{"plan": "pro\\u0000"}', None),
    ],
)
def test_hostile_plan_bodies_are_refused_before_any_write(
    harness: Harness, method: str, url: str, body: str, place: str | None
) -> None:
    assert harness.api.request("PUT", "/plans/free", {"quotas": {"seats": {"limit": 1}}}).status == 200
    before = plans(harness)
    refused_before_any_write(harness, method, url, body, place)
    assert plans(harness) == before
