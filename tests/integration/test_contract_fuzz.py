"""Hostile input against the whole system, driven by the project's own docs/openapi.json:
schemathesis generates requests for every operation, valid and not (unicode, huge and negative
numbers, odd ids, missing and extra fields), and checks every answer with all of its checks: no
5xx, every status, header and body as documented, invalid data refused, valid data accepted.
Every request is signed (docs/security.md).

(schemathesis's pytest plugin does not run on pytest 9 yet, so its strategies are driven by
hypothesis here; its coverage and stateful phases are not run.)"""

from __future__ import annotations

from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS

from local.sigv4 import sign
from scripts.openapi import OPENAPI_FILE
from tests.integration.conftest import System

EXAMPLES_PER_OPERATION = 30


def signed(case: schemathesis.Case, system: System) -> dict[str, str]:
    """The SigV4 headers for the request `case` makes (its method, URL and body; the host and the
    date are the only headers signed, so the ones schemathesis adds do not matter). Passed as
    headers, not as a requests auth hook, so schemathesis's ignored-auth check can take them away."""
    kwargs = case.as_transport_kwargs(base_url=system.api.base_url)
    keep = ("method", "url", "params", "json", "data")
    prepared = requests.Request(**{key: kwargs[key] for key in keep if key in kwargs}).prepare()
    body = prepared.body.encode() if isinstance(prepared.body, str) else prepared.body
    url, method = str(prepared.url), str(prepared.method)
    headers = sign(system.api.credentials, system.api.region, method, url, body, {})
    return {name: value for name, value in headers.items() if name.lower() != "host"}


def operations() -> list[Any]:
    return [result.ok() for result in schemathesis.openapi.from_path(OPENAPI_FILE).get_all_operations()]


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda mode: mode.value)
@pytest.mark.parametrize("operation", operations(), ids=lambda operation: operation.label)
def test_every_answer_to_generated_input_is_documented_and_never_a_5xx(
    system: System, operation: Any, mode: GenerationMode
) -> None:
    checks = CHECKS.get_all()
    # A cursor is opaque: only one the API returned is valid, and any other is refused as
    # documented (400 InvalidCursor). No generator can make a valid one, so a request carrying a
    # generated cursor is not held to "valid data is accepted"; every other check still applies.
    # Nor is one with a generated If-Match: it names a version the account is not at (412).
    without_acceptance = [check for check in checks if check.__name__ != "positive_data_acceptance"]
    quiet = list(HealthCheck)

    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=quiet, database=None)
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: schemathesis.Case) -> None:
        response = case.call(base_url=system.api.base_url, headers=signed(case, system), timeout=30)
        carries_cursor = bool(case.query) and "cursor" in case.query
        carries_precondition = any(name.lower() == "if-match" for name in case.headers or {})
        unguessable = carries_cursor or carries_precondition
        case.validate_response(response, checks=without_acceptance if unguessable else checks)

    check()
