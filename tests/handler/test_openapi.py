"""The committed OpenAPI document is the one the handler's models generate."""

from __future__ import annotations

import json

from scripts.openapi import OPENAPI_FILE, render
from tests.handler.conftest import Harness

Headers = dict[str, str] | None


def test_committed_openapi_document_is_current() -> None:
    assert OPENAPI_FILE.read_text(encoding="utf-8") == render(), "run `make openapi` and commit docs/openapi.json"


def test_document_describes_the_contract() -> None:
    document = json.loads(render())
    paths = document["paths"]
    assert set(paths) == {
        "/accounts/{accountId}",
        "/accounts/{accountId}/resources",
        "/accounts/{accountId}/resources/{resourceId}",
    }
    assert set(paths["/accounts/{accountId}/resources"]) == {"get", "post"}
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
    assert {status for _, _, status in given} == {200, 201, 204, 400, 404, 409, 413, 422}
    for method, template, status in given:
        documented = document["paths"][template][method]["responses"]
        assert str(status) in documented, (method, template, status)
        if status >= 400:
            schema = documented[str(status)]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, (method, template, status)
    assert "content" not in document["paths"][resource]["delete"]["responses"]["204"]
    assert "422" not in document["paths"][account]["get"]["responses"]  # validation errors are 400s
