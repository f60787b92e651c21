"""A path value the API would not take is refused by the client before it sends anything, by every
method that takes one, sync and async: `..` or `.` would otherwise reach another quota's path (the
local gateway removes dot segments before routing, `%2E` included, so against `make run`
`put_type_limit("acme", "..", ...)` was `PUT /accounts/acme`; API Gateway's handling is not
documented), and anything else off the pattern would only be refused by the API after a request,
or retried."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hybrid_counter_client import AsyncLimitsClient, InvalidPathValue, LimitsClient
from hybrid_counter_client.operations import ARGUMENT_NAMES, OPERATIONS, PATH_PATTERNS, checked_path_value

from tests.client.conftest import ScriptedServer, Waits, client_of, static_session

# Every method that takes a path value: one per operation, and the iterators over every page.
METHODS = sorted({operation.client_method for operation in OPERATIONS} | {"list_resources", "list_typed_resources"})
GOOD = {
    "account_id": "acme",
    "resource_type": "seats",
    "resource_id": "r-1",
    "name": "vm-1",
    "limit": 3,
    "amount": 2,
    "plan_id": "pro",
    "quotas": {},
}
PATH_ARGUMENTS = set(ARGUMENT_NAMES.values())
Clients = tuple[LimitsClient, AsyncLimitsClient, Waits]
# A call of `method` with `argument` given `value` (the `send` fixture).
Send = Callable[[str, str, str], None]
# Off every pattern: dot segments (raw and as the gateway decodes them), another path's separator,
# nothing, a trailing newline (which Python's `$` alone would let through), a name too long.
BAD = ["..", ".", "%2E%2E", "a/b", "", "acme\n", "x" * 65, "Caps.", "a b"]


def path_arguments(method: Callable[..., Any]) -> list[str]:
    return [name for name in inspect.signature(method).parameters if name in PATH_ARGUMENTS]


def cases() -> list[Any]:
    found = []
    for method in METHODS:
        for argument in path_arguments(getattr(LimitsClient, method)):
            for value in ("..", "a/b"):
                found.append(pytest.param(method, argument, value, id=f"{method}-{argument}-{value!r}"))
    return found


def arguments(method: Callable[..., Any], bad: str, value: Any) -> tuple[list[Any], dict[str, Any]]:
    """The method's required arguments, each a good value but `bad`."""
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    for name, parameter in inspect.signature(method).parameters.items():
        if name == "self" or parameter.default is not inspect.Parameter.empty:
            continue
        given = value if name == bad else GOOD[name]
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            keywords[name] = given
        else:
            positional.append(given)
    return positional, keywords


@pytest.fixture(scope="module")
def quiet() -> Iterator[ScriptedServer]:
    """One server for the module's refusals: none of them may send it anything."""
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


@pytest.fixture(scope="module")
def clients(quiet: ScriptedServer) -> Clients:
    waits = Waits()
    sync = client_of(quiet, waits)
    asynchronous = AsyncLimitsClient(quiet.url, static_session(), clock=waits.clock, sleep=waits.async_sleep)
    return sync, asynchronous, waits


def test_every_method_with_a_path_value_is_covered() -> None:
    """Each operation's path parameters are arguments of its method, so the cases above reach all."""
    for operation in OPERATIONS:
        documented = {ARGUMENT_NAMES[name] for name in PATH_PATTERNS if f"{{{name}}}" in operation.path}
        assert set(path_arguments(getattr(LimitsClient, operation.client_method))) == documented, operation


@pytest.fixture(params=["sync", "async"])
def send(request: pytest.FixtureRequest, clients: Clients) -> Send:
    """Calls a method of the sync client, or of the async one (run to its end: every page of an
    iterator), with each required argument good but `argument`, which is `value`."""
    sync, asynchronous, _ = clients

    def on_the_sync_client(method: str, argument: str, value: str) -> None:
        call = getattr(sync, method)
        positional, keywords = arguments(call, argument, value)
        result = call(*positional, **keywords)
        if inspect.isgenerator(result):
            list(result)

    def on_the_async_client(method: str, argument: str, value: str) -> None:
        call = getattr(asynchronous, method)
        positional, keywords = arguments(call, argument, value)

        async def run() -> None:
            result = call(*positional, **keywords)
            if inspect.isasyncgen(result):
                [item async for item in result]
            else:
                await result

        asyncio.run(run())

    return on_the_sync_client if request.param == "sync" else on_the_async_client


@pytest.mark.parametrize(("method", "argument", "value"), cases())
def test_each_client_refuses_before_sending(
    quiet: ScriptedServer, clients: Clients, send: Send, method: str, argument: str, value: str
) -> None:
    with pytest.raises(InvalidPathValue) as refused:
        send(method, argument, value)
    assert (refused.value.parameter, refused.value.value) == (argument, value)
    assert argument in str(refused.value)
    assert quiet.received == []
    assert clients[2].slept == []


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("name", sorted(PATH_PATTERNS))
def test_every_parameter_s_check_refuses_what_its_pattern_does_not_take(name: str, value: str) -> None:
    with pytest.raises(InvalidPathValue) as refused:
        checked_path_value(name, value)
    assert refused.value.parameter == ARGUMENT_NAMES[name]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("accountId", "acme"),
        ("accountId", "A-z_9" * 12 + "abcd"),
        ("resourceType", "seats"),
        ("resourceType", "default"),
        ("resourceType", "a" + "-" * 31),
        ("resourceId", "0f3c5d1e-2a4b-4c8d-9e0f-1a2b3c4d5e6f"),
    ],
)
def test_a_value_the_api_takes_is_taken(name: str, value: str) -> None:
    assert checked_path_value(name, value) == value


def test_a_value_that_is_not_a_string_is_refused_too(server: ScriptedServer, waits: Waits) -> None:
    number: Any = 7
    with pytest.raises(InvalidPathValue, match="account_id=7"):
        client_of(server, waits).get_account(number)
    assert server.received == []


def test_it_is_a_value_error_and_not_an_answer_of_the_api() -> None:
    from hybrid_counter_client import HybridCounterError

    assert issubclass(InvalidPathValue, ValueError)
    assert not issubclass(InvalidPathValue, HybridCounterError)
