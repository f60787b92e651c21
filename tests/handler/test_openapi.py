"""The committed OpenAPI document is the one the handler's models generate."""

from __future__ import annotations

import json

from scripts.openapi import OPENAPI_FILE, render


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
