"""The Lambda service's concurrency and timeouts, as the local runtime applies them to real sandboxes.

AWS: a synchronous invocation beyond the function's concurrency fails at once with
TooManyRequestsException, it is never queued ("Lambda function scaling", "Invoke"); a function's
timeout counts its run; API Gateway maps a rejected invocation to 500, a function error or timeout
to 502, its own integration timeout to 504 ("Handle Lambda errors in API Gateway").
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator

import pytest

from local.apigateway import failure_answer
from local.functions import REQUEST_LIMIT_BYTES, RESPONSE_LIMIT_BYTES, DeployedFunction, FunctionPool, Invocation
from local.http_client import poll


def slow_function(timeout_seconds: int = 1, reserved: int | None = None) -> DeployedFunction:
    return DeployedFunction(
        "slow", "arn:slow", "tests.runtime.sandbox_handlers.sleep_then_answer", timeout_seconds, 128, {}, reserved
    )


@pytest.fixture
def pool() -> Iterator[FunctionPool]:
    pool = FunctionPool(slow_function(), {}, account_concurrency=1)
    pool.warm_up()
    yield pool
    pool.close()


def in_background(pool: FunctionPool, seconds: float) -> list[Invocation]:
    """Start an invocation that holds the only sandbox, and wait until it runs."""
    results: list[Invocation] = []
    threading.Thread(target=lambda: results.append(pool.invoke({"sleep": seconds})), daemon=True).start()
    poll(lambda: pool.busy, lambda busy: busy == 1, timeout=10, interval=0.01)
    return results


def test_a_synchronous_invocation_beyond_the_concurrency_is_throttled_at_once(pool: FunctionPool) -> None:
    first = in_background(pool, 0.8)
    started = time.perf_counter()
    rejected = pool.invoke({"sleep": 0}, synchronous=True)
    waited = time.perf_counter() - started
    assert rejected.throttled
    assert rejected.error_type == "TooManyRequestsException"
    assert waited < 0.1  # never queued behind the running one
    assert (failure_answer(rejected).status, failure_answer(rejected).message) == (500, "Internal server error")
    poll(lambda: first, lambda done: bool(done) and done[0].ok, timeout=10)  # the first one was not disturbed


def test_a_queued_poller_invocation_has_its_whole_timeout_to_run(pool: FunctionPool) -> None:
    """A poller waits for the sandbox; the wait is not counted against the 1 s timeout."""
    in_background(pool, 0.7)
    second = pool.invoke({"sleep": 0.7})
    assert second.ok, second
    assert second.payload["remaining_ms"] > 100


def test_a_run_past_the_function_timeout_is_a_function_error(pool: FunctionPool) -> None:
    late = pool.invoke({"sleep": 1.5}, synchronous=True)
    assert late.timed_out
    assert not late.caller_gave_up
    assert (failure_answer(late).status, failure_answer(late).message) == (502, "Internal server error")
    # Its sandbox stays busy until the run ends: a call now is throttled, not queued behind it.
    assert pool.invoke({"sleep": 0}, synchronous=True).throttled
    poll(lambda: pool.busy, lambda busy: busy == 0, timeout=10, interval=0.05)
    assert pool.invoke({"sleep": 0}, synchronous=True).ok


def test_the_integration_timeout_is_a_504(pool: FunctionPool) -> None:
    gave_up = pool.invoke({"sleep": 0.6}, synchronous=True, patience_seconds=0.3)
    assert gave_up.caller_gave_up
    assert not gave_up.timed_out
    assert (failure_answer(gave_up).status, failure_answer(gave_up).message) == (504, "Endpoint request timed out")


def test_reserved_concurrency_from_the_template_wins_over_the_account_limit() -> None:
    pool = FunctionPool(slow_function(reserved=2), {}, account_concurrency=7)
    try:
        assert pool.concurrency == 2
    finally:
        pool.close()


def test_provisioning_starts_every_sandbox_before_the_first_invocation() -> None:
    """As provisioned concurrency: a load test's first seconds must not pay for cold starts."""
    pool = FunctionPool(slow_function(), {}, account_concurrency=3)
    try:
        sandboxes = pool.warm_up(3)
        assert len(sandboxes) == 3
        for pid in sandboxes:
            os.kill(pid, 0)  # alive, its imports done (it answered)
        assert pool.warm_up(5) == sandboxes  # never beyond the concurrency, and no new ones
    finally:
        pool.close()


@pytest.fixture(scope="module")
def sizable() -> Iterator[FunctionPool]:
    function = DeployedFunction("big", "arn:big", "tests.runtime.sandbox_handlers.answer_of_size", 10, 128, {})
    pool = FunctionPool(function, {}, account_concurrency=1)
    yield pool
    pool.close()


# The response's JSON around a body of N characters: {"statusCode": 200, "body": "..."}.
RESPONSE_JSON_AROUND_BODY = len('{"statusCode": 200, "body": ""}')


@pytest.mark.parametrize(
    ("character", "characters", "ok"),
    [
        ("x", RESPONSE_LIMIT_BYTES - RESPONSE_JSON_AROUND_BODY, True),
        ("x", RESPONSE_LIMIT_BYTES - RESPONSE_JSON_AROUND_BODY + 1, False),
        ('"', (RESPONSE_LIMIT_BYTES - RESPONSE_JSON_AROUND_BODY) // 2 + 1, False),  # escaped, it doubles
    ],
)
def test_a_response_over_lambdas_6_mb_fails_the_invocation(
    sizable: FunctionPool, character: str, characters: int, ok: bool
) -> None:
    """Lambda refuses a synchronous response over 6 MB (6,291,556 bytes of the JSON the function
    returns, its body escaped inside it): the invocation fails, and API Gateway answers as for a
    function error."""
    invocation = sizable.invoke({"character": character, "characters": characters}, synchronous=True)
    assert invocation.ok is ok, invocation.error_message
    if not ok:
        assert (
            invocation.error_message == "Response payload size exceeded maximum allowed payload size (6291556 bytes)."
        )
        assert failure_answer(invocation).status == 502


def test_an_event_over_lambdas_6_mb_is_rejected_before_it_runs(sizable: FunctionPool) -> None:
    event = {"character": "x", "characters": 1, "padding": "x" * REQUEST_LIMIT_BYTES}
    rejected = sizable.invoke(event, synchronous=True)
    assert (rejected.ok, rejected.payload_too_large) == (False, True)
    assert rejected.error_type == "RequestEntityTooLargeException"
    assert sizable.busy == 0  # nothing ran
    assert (failure_answer(rejected).status, failure_answer(rejected).response_type) == (500, "INTEGRATION_FAILURE")


def test_a_sandbox_forked_with_the_libraries_imported_is_still_a_sandbox_of_its_own() -> None:
    """With `preload`, sandboxes are forked from a server that imported those libraries once (the
    local runtime's product functions start in 0.32 s of CPU instead of 0.72); each still has its
    function's environment, loads its handler itself and keeps its module state to itself."""
    function = DeployedFunction(
        "probe", "arn:probe", "tests.runtime.sandbox_handlers.describe_sandbox", 10, 128, {"SANDBOX_SETTING": "mine"}
    )
    pool = FunctionPool(function, {}, account_concurrency=2, preload=("boto3", "pydantic"))
    try:
        assert len(pool.warm_up(2)) == 2
        answers = _two_at_once(pool)
        assert {answer["pid"] for answer in answers} == pool.warm_up(2)  # one invocation in each sandbox
        for answer in answers:
            assert (answer["setting"], answer["imported_before"], answer["invocations"]) == (
                "mine",
                ["boto3", "pydantic"],
                1,
            )
    finally:
        pool.close()


def _two_at_once(pool: FunctionPool) -> list[dict[str, object]]:
    """Two invocations side by side, each holding its sandbox until the other has come, so that each
    runs in its own."""
    results: list[Invocation] = []
    folder = tempfile.mkdtemp(prefix="rendezvous-")
    event = {"rendezvous": folder, "parties": 2}
    threads = [threading.Thread(target=lambda: results.append(pool.invoke(event))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(results) == 2
    assert all(result.ok for result in results), results
    return [dict(result.payload) for result in results]


def test_without_preload_a_sandbox_is_a_fresh_interpreter() -> None:
    function = DeployedFunction("probe", "arn:probe", "tests.runtime.sandbox_handlers.describe_sandbox", 10, 128, {})
    pool = FunctionPool(function, {}, account_concurrency=1)
    try:
        invocation = pool.invoke({})
        assert invocation.ok, invocation.error_message
        assert invocation.payload["imported_before"] == []
    finally:
        pool.close()


def test_the_libraries_preloaded_for_the_stack_read_nothing_its_functions_are_given() -> None:
    """local/product.py preloads libraries that read some settings as they are imported, before a
    sandbox's environment is set: no function of the stack may be given one of them."""
    from local.product import READ_AT_IMPORT
    from tests.support.template import synth_template_json

    given = {
        name
        for resource in synth_template_json()["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        for name in (resource["Properties"].get("Environment") or {}).get("Variables", {})
    }
    assert "TABLE_NAME" in given
    assert not {name for name in given if name.startswith(READ_AT_IMPORT)}
