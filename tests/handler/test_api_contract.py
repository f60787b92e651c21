"""The HTTP contract (docs/openapi.json, docs/api.md) through the real api handler."""

from __future__ import annotations

import json

import pytest

from tests.handler.conftest import Harness
from tests.support.faults import Faults, dynamodb_error
from tests.support.truth import read_truth


def test_account_is_created_updated_and_read(harness: Harness) -> None:
    api = harness.api
    created = api.put_account("acme", 3)
    assert created.status == 200
    assert created.json() == {
        "accountId": "acme",
        "limit": 3,
        "limitSource": "account",  # set by its own PUT (docs/plans.md)
        "mode": "enforce",  # not in shadow mode (docs/plans.md)
        "bestEffort": 0,
        "eventual": 0,
        "used": 0,
        "available": 3,
        "rateLimit": {"requestsPerSecond": 1000, "burstSeconds": 2},
    }
    assert api.put_account("acme", 7).json()["limit"] == 7
    assert api.account("acme")["available"] == 7


def test_unknown_account_is_not_found(harness: Harness) -> None:
    for response in (
        harness.api.request("GET", "/accounts/nobody"),
        harness.api.create("nobody"),
        harness.api.request("GET", "/accounts/nobody/resources"),
    ):
        assert response.status == 404
        assert response.json()["error"]["code"] == "AccountNotFound"


def test_resource_lifecycle(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 5)
    created = api.create("acme", "vm-1", size=2)
    assert created.status == 201
    body = created.json()
    assert body["name"] == "vm-1"
    assert body["attributes"] == {"size": 2}
    assert created.headers["Location"] == f"/accounts/acme/resources/{body['resourceId']}"
    assert api.account("acme")["bestEffort"] == 1  # immediate, before the stream is applied

    url = f"/accounts/acme/resources/{body['resourceId']}"
    assert api.request("GET", url).json() == body
    assert api.delete("acme", body["resourceId"]).status == 204
    assert api.request("GET", url).status == 404  # soft-deleted reads as missing
    second = api.delete("acme", body["resourceId"])
    assert (second.status, second.json()["error"]["code"]) == (404, "ResourceNotFound")


def test_list_pages_through_live_resources_only(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 20)
    ids = [api.create("acme", f"r{i}").json()["resourceId"] for i in range(7)]
    api.delete("acme", ids[0])
    api.delete("acme", ids[3])

    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        url = "/accounts/acme/resources?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = api.request("GET", url).json()
        assert len(page["items"]) <= 2
        seen += [item["resourceId"] for item in page["items"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(set(ids) - {ids[0], ids[3]})
    assert seen == sorted(seen)  # resource-id order, as docs/api.md and the OpenAPI description say
    assert pages >= 3


def test_create_at_the_limit_is_refused(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 2)
    assert [api.create("acme").status for _ in range(3)] == [201, 201, 409]
    refused = api.create("acme")
    assert refused.json()["error"]["code"] == "LimitExceeded"
    assert harness.truth("acme").existing == 2


def test_limit_counts_the_eventual_counter_when_best_effort_lags(harness: Harness, faults: Faults) -> None:
    api = harness.api
    api.put_account("acme", 1)
    faults.crash_after("PutItem")  # the create dies before its best-effort increment
    with pytest.raises(faults.SimulatedCrash):
        api.create("acme")
    harness.pump()
    assert api.account("acme")["bestEffort"] == 0
    assert api.account("acme")["eventual"] == 1
    assert api.create("acme").status == 409


def test_idempotent_retry_returns_the_same_resource_and_counts_once(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 5)
    first = api.create("acme", "vm", key="req-1")
    again = api.create("acme", "vm", key="req-1")
    assert (first.status, again.status) == (201, 200)
    assert again.json() == first.json()
    harness.pump()
    account = api.account("acme")
    assert (account["bestEffort"], account["eventual"]) == (1, 1)


def test_idempotency_key_with_another_body_is_unprocessable(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 5)
    api.create("acme", "vm", key="req-1")
    other = api.create("acme", "other", key="req-1")
    assert (other.status, other.json()["error"]["code"]) == (422, "IdempotencyKeyMismatch")


def test_idempotency_key_of_a_deleted_resource_is_a_conflict(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 5)
    resource_id = api.create("acme", "vm", key="req-1").json()["resourceId"]
    api.delete("acme", resource_id)
    replay = api.create("acme", "vm", key="req-1")
    assert (replay.status, replay.json()["error"]["code"]) == (409, "IdempotencyKeyReused")


BAD_REQUESTS = [
    ("PUT", "/accounts/acme", "{not json", None, 400),
    ("PUT", "/accounts/acme", {"limit": "5"}, None, 400),
    ("PUT", "/accounts/acme", {"limit": -1}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "extra": 1}, None, 400),
    ("PUT", "/accounts/acme", {"limit": True}, None, 400),
    ("PUT", "/accounts/ac%20me", {"limit": 5}, None, 400),
    ("PUT", "/accounts/" + "a" * 65, {"limit": 5}, None, 400),
    # A quota's thresholds: 1 to 10 whole percentages, each 1..100 and once (docs/events.md).
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": []}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": [0]}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": [101]}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": [50, 50]}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": list(range(1, 12))}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": ["50"]}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": [50.5]}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": [True]}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": 80}, None, 400),
    ("PUT", "/accounts/acme", {"limit": 5, "thresholds": None}, None, 400),
    ("PUT", "/accounts/acme/types/seats", {"limit": 5, "thresholds": [0, 50]}, None, 400),
    ("PUT", "/accounts/acme/types/seats", {"limit": 5, "thresholds": None}, None, 400),
    ("POST", "/accounts/acme/resources", {"name": ""}, None, 400),
    ("POST", "/accounts/acme/resources", {"name": 5}, None, 400),
    ("POST", "/accounts/acme/resources", {"name": "x", "attributes": []}, None, 400),
    ("POST", "/accounts/acme/resources", [], None, 400),
    ("POST", "/accounts/acme/resources", {"name": "x" * 300}, None, 400),
    ("POST", "/accounts/acme/resources", {"name": "x", "attributes": {"blob": "y" * 70000}}, None, 413),
    ("POST", "/accounts/acme/resources", {"name": "x"}, {"Idempotency-Key": "has space"}, 400),
    ("POST", "/accounts/acme/resources", {"name": "x"}, {"Idempotency-Key": "k" * 256}, 400),
    ("GET", "/accounts/acme/resources?limit=0", None, None, 400),
    ("GET", "/accounts/acme/resources?limit=abc", None, None, 400),
    ("GET", "/accounts/acme/resources?cursor=bm90LWEta2V5", None, None, 400),
    ("GET", "/accounts/acme/resources?cursor=%%%", None, None, 400),
    # Only the list takes query parameters, and only its own (schemathesis found `?=null` accepted).
    ("GET", "/accounts/acme/resources?limt=5", None, None, 400),
    ("GET", "/accounts/acme/resources?cursor=&=null", None, None, 400),
    ("GET", "/accounts/acme?verbose=1", None, None, 400),
    ("DELETE", "/accounts/acme/resources/bad%20id", None, None, 400),
    ("PATCH", "/accounts/acme", None, None, 405),  # a path the API has, a method it does not take
    # Not UTF-8 (schemathesis found these answered 502: the function crashed on the decode).
    ("PUT", "/accounts/acme", b'{"limit": 5, "x": "\xff"}', None, 400),
    ("POST", "/accounts/acme/resources", b'{"name": "\xc3\x28"}', None, 400),
]


@pytest.mark.parametrize(("method", "url", "body", "headers", "status"), BAD_REQUESTS)
def test_bad_input_is_a_clear_4xx_and_writes_nothing(
    harness: Harness,
    method: str,
    url: str,
    body: object,
    headers: dict[str, str] | None,
    status: int,
    faults: Faults,
) -> None:
    harness.api.put_account("acme", 5)
    before = read_truth(harness.backend.dynamodb, harness.backend.table)
    response = harness.api.request(method, url, body, headers)
    assert response.status == status, response.text
    error = response.json()["error"]
    assert error["code"]
    assert error["message"]
    assert read_truth(harness.backend.dynamodb, harness.backend.table) == before


THROTTLED = dynamodb_error("ThrottlingException", "Rate of requests exceeds the allowed throughput.")


def test_dynamodb_errors_reach_callers_as_a_plain_retryable_503(harness: Harness, faults: Faults) -> None:
    harness.api.put_account("acme", 5)
    given = faults.answer_instead("PutItem", lambda _: True, THROTTLED, times=100)
    response = harness.api.create("acme")
    assert given[0] == 3  # the SDK retried internally before the API gave up
    assert response.status == 503
    assert response.headers["Retry-After"] == "1"
    assert response.json()["error"]["code"] == "ServiceUnavailable"
    assert "Throttling" not in response.text
    # Throttling proves the write did not land, so the reserved slot was given back.
    assert harness.truth("acme").admitted == 0


def test_throttling_that_passes_is_absorbed_by_internal_retries(harness: Harness, faults: Faults) -> None:
    harness.api.put_account("acme", 5)
    given = faults.answer_instead(*faults.API_WRITES["commit"], THROTTLED, times=2)
    assert harness.api.create("acme").status == 201
    assert given[0] == 2
    assert harness.api.account("acme")["bestEffort"] == 1  # the SDK's third attempt counted it


def test_error_bodies_are_json_with_code_message_and_the_request_id(harness: Harness) -> None:
    """The same envelope as API Gateway's own errors (infra/gateway_errors.py), its request id too."""
    harness.api.put_account("acme", 5)
    response = harness.api.request("GET", "/accounts/acme/resources/nope")
    assert response.status == 404
    assert response.headers["Content-Type"] == "application/json"
    assert json.loads(response.text) == {
        "error": {
            "code": "ResourceNotFound",
            "message": "resource 'nope' does not exist in account 'acme'",
            "requestId": "test-request",  # the event's requestContext.requestId
        }
    }


def test_bodies_are_read_as_json_whatever_the_content_type(harness: Harness) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}  # what `curl -d` sends
    response = harness.api.request("PUT", "/accounts/acme", {"limit": 2}, form)
    assert response.status == 200, response.text
    assert harness.api.request("POST", "/accounts/acme/resources", {"name": "vm"}, form).status == 201


@pytest.mark.parametrize(
    "content_type",
    [
        "multipart/form-data",  # no boundary: Powertools raised ValueError, the function failed (503)
        "multipart/form-data; boundary=",
        "multipart/form-data; boundary=x",
        "text/plain",  # a type Powertools does not read: 415 outside the envelope
        "application/xml",
        "application/x-www-form-urlencoded",
        "application/json",
    ],
)
def test_an_empty_body_is_a_validation_error_whatever_its_content_type(harness: Harness, content_type: str) -> None:
    harness.api.put_account("acme", 5)
    before = read_truth(harness.backend.dynamodb, harness.backend.table)
    for method, url in [
        ("PUT", "/accounts/acme"),
        ("PUT", "/accounts/acme/types/seats"),
        ("POST", "/accounts/acme/resources"),
    ]:
        for body in ("", None):
            response = harness.api.request(method, url, body, {"Content-Type": content_type})
            assert (response.status, response.headers["Content-Type"]) == (400, "application/json"), response.text
            assert json.loads(response.text) == {
                "error": {"code": "ValidationError", "message": "body: Field required", "requestId": "test-request"}
            }, (method, url, body)
    assert read_truth(harness.backend.dynamodb, harness.backend.table) == before


def test_a_refused_admission_is_counted_for_the_dashboard(harness: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    harness.api.put_account("acme", 1)
    assert harness.api.create("acme").status == 201
    capsys.readouterr()
    assert harness.api.create("acme").status == 409
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [metric.get("AdmissionsRefused") for metric in emitted] == [[1.0]]


@pytest.mark.parametrize(("limit", "status"), [(7.0, 200), (7.5, 400), ("7", 400), (True, 400)])
def test_a_limit_is_a_json_integer_as_json_schema_counts_them(harness: Harness, limit: object, status: int) -> None:
    """7.0 is an integer in JSON Schema (and so in docs/openapi.json); schemathesis found it refused."""
    response = harness.api.request("PUT", "/accounts/acme", {"limit": limit})
    assert response.status == status, response.text
    if status == 200:
        assert response.json()["limit"] == 7
