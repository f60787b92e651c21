"""What the tiers share: the emulator processes of the session (moto's server; DynamoDB Local for
the handler tier's `--emulator dynamodb-local` and for its tests marked `engine` with `--emulator
mixed`), `fresh_backend`, a table of its own from the synthesized template for each test, which
the handler tier's `backend` and the ops tier's `moto_backend` fixtures build, and the check that
every DynamoDB request shape the handler tier sent reached AWS's engine (`--emulator mixed`)."""

from __future__ import annotations

import contextlib
import os
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from hypothesis import settings

from functions.shared.config import FunctionEnvironment, Settings
from functions.shared.wiring import Wiring
from local.dynamodb_local import DynamoDBLocalProcess
from local.emulator import EmulatorProcess
from tests.support.clock import FakeClock
from tests.support.request_shapes import DYNAMODB_LOCAL, MOTO, SHAPES
from tests.support.sessions import new_session

# CI explores the same examples on every run, so a red build always reproduces; on a
# developer's machine hypothesis keeps drawing new ones.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

TEST_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "hybrid-counter",
    "POWERTOOLS_METRICS_NAMESPACE": "HybridCounterTests",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}
# Powertools' Logger, Metrics and Tracer read their settings when functions.shared.observability is
# first imported, which a test module may do while it is collected, before any fixture runs: a
# Metrics built then has no namespace for the rest of the process, and every handler fails.
for _name, _value in TEST_ENVIRONMENT.items():
    if _name.startswith("POWERTOOLS_"):
        os.environ.setdefault(_name, _value)


# What serves DynamoDB to the handler tier (`--emulator`): moto's server, as in `make run`;
# DynamoDB Local, AWS's own engine, which refuses what moto forgives (`make test-dynamodb-local`);
# or `mixed` (`make test`): moto's server, and DynamoDB Local for the tests marked `engine`, with
# the check that every request shape sent to moto reached DynamoDB Local too
# (tests/support/request_shapes.py). The other tiers need more than DynamoDB (queues, functions,
# the stack) and always use moto's server.
MIXED = "mixed"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--emulator",
        choices=(MOTO, DYNAMODB_LOCAL, MIXED),
        default=MOTO,
        help="what serves DynamoDB to the handler tier: moto's server (default), DynamoDB Local, or "
        "moto's server and DynamoDB Local for the tests marked engine (make test)",
    )


def on_dynamodb_local(config: pytest.Config, node: pytest.Item | pytest.Collector) -> bool:
    """Whether this handler-tier test (or module) runs on DynamoDB Local."""
    option = config.getoption("--emulator")
    if option == MIXED:
        return node.get_closest_marker("engine") is not None
    return bool(option == DYNAMODB_LOCAL)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """The DynamoDB requests of a handler-tier test, its fixtures' included, are noted under its engine."""
    if item.get_closest_marker("handler") is not None:
        SHAPES.engine = DYNAMODB_LOCAL if on_dynamodb_local(item.config, item) else MOTO
    yield
    SHAPES.engine = None


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: its shapes go to the controller
        workeroutput["request_shapes"] = SHAPES.as_json()
        return
    if not _checks_request_shapes(session.config):
        return
    missing = SHAPES.only_on_moto()
    if missing:
        session.config.stash[_SHAPES_MISSING] = missing
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist: a worker is done; its request shapes join the session's."""
    SHAPES.add(getattr(node, "workeroutput", {}).get("request_shapes", {}))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    missing = config.stash.get(_SHAPES_MISSING, [])
    if missing:
        terminalreporter.section("DynamoDB requests never sent to DynamoDB Local", red=True)
        terminalreporter.line(
            "These request shapes reached moto's server only; mark a test that sends each `engine` "
            "(tests/support/request_shapes.py):"
        )
        for shape in missing:
            terminalreporter.line(f"  {shape}")


_SHAPES_MISSING = pytest.StashKey[list[str]]()


def _checks_request_shapes(config: pytest.Config) -> bool:
    """Only a whole run (make test's) can tell a shape no engine test sends: a narrowed one
    (paths, -k, -m, --lf, --deselect) may have left out the engine test that sends it."""
    narrowed = (
        config.args_source != pytest.Config.ArgsSource.TESTPATHS
        or config.option.keyword
        or config.option.markexpr
        or config.option.deselect
        or config.getoption("lf", False)
    )
    return config.getoption("--emulator") == MIXED and not narrowed


@pytest.fixture(scope="session")
def aws_test_settings() -> Iterator[None]:
    """Credentials, region and Powertools settings for the session's clients and handlers."""
    previous = {name: os.environ.get(name) for name in [*TEST_ENVIRONMENT, "AWS_ENDPOINT_URL"]}
    os.environ.update(TEST_ENVIRONMENT)
    yield
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def emulator_url(aws_test_settings: None) -> Iterator[str]:
    """The session's moto server; the tests' own boto3 clients find it through AWS_ENDPOINT_URL."""
    with EmulatorProcess() as emulator:
        os.environ["AWS_ENDPOINT_URL"] = emulator.url
        yield emulator.url


@pytest.fixture(scope="session")
def dynamodb_local_url(aws_test_settings: None) -> Iterator[str]:
    with DynamoDBLocalProcess() as emulator:
        yield emulator.url


@dataclass
class Backend:
    """What the handlers of one test run on: a table of its own in an emulator, its stream, SDK
    clients of the test's own on both, and the wiring the handlers are given."""

    table: str
    stream_arn: str
    endpoint_url: str  # the emulator serving this test's table
    dynamodb: Any
    streams: Any
    wiring: Wiring  # what this test's handlers are given: a session, settings and a clock of their own

    @property
    def clock(self) -> FakeClock:
        """The time the handlers read (tests/support/clock.py): the test sets it, not the hour it runs at."""
        assert isinstance(self.wiring.clock, FakeClock)
        return self.wiring.clock

    def drop(self) -> None:
        """Delete the table, once the test is done with it. DynamoDB Local keeps every table of a
        session in one in-memory database, and slows as they pile up: with 300 tables of this
        schema, a call took it 1.8 times the CPU it took with none, and it spent 5% of a core idle
        (2026-11-27); a worker of `make test` made about 400."""
        with contextlib.suppress(self.dynamodb.exceptions.ResourceNotFoundException):  # the test's own delete
            self.dynamodb.delete_table(TableName=self.table)


def fresh_backend(endpoint_url: str, shared: bool = False) -> Backend:
    """A table of its own built from the synthesized template, and wiring of its own for the
    handlers (a new session: no fault hook of an earlier test on them; a FakeClock at its default
    start). On moto's server the emulator is emptied first; a `shared` one (DynamoDB Local) keeps
    earlier tests' tables."""
    from tests.support.tables import create_table

    if not shared:
        urllib.request.urlopen(urllib.request.Request(f"{endpoint_url}/moto-api/reset", method="POST")).close()
    table = f"counter-{uuid.uuid4().hex[:8]}"
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint_url)
    stream_arn = create_table(dynamodb, table)
    settings = Settings.from_env({**os.environ, FunctionEnvironment.variable("table_name"): table})
    return Backend(
        table=table,
        stream_arn=stream_arn,
        endpoint_url=endpoint_url,
        dynamodb=dynamodb,
        streams=boto3.client("dynamodbstreams", endpoint_url=endpoint_url),
        wiring=Wiring(settings, new_session(), endpoint_url, FakeClock()),
    )


TIER_OF_FOLDER = {
    "unit": "unit",
    "handler": "handler",
    "integration": "integration",
    "infra": "infra",
    "runtime": "runtime",
    "chaos": "chaos",
    "ops": "ops",
    "client": "client",
}


# The order the tests are dealt in: the chaos runs first, then the modules whose tests share a
# costly module fixture (`shares_setup`: kept together at the front of a worker's share, which no
# other worker takes from, so one worker sets it up once), then the rest in collection order.
FIRST = ("chaos", "shares_setup")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test carries the marker of its tier's folder, so `-m unit` selects a whole tier.

    `make test` gives each worker a share of the tests and lets a worker that runs out take half
    of what another has left (pytest-xdist `--dist worksteal`), so the workers end together only if
    what is left at the end is short. A worker takes from the end of another's share, so the
    longest tests (the chaos runs) and the modules that share a setup go at the front; sorting the
    tests marked slow there too ran the heavy concurrency tests side by side with the chaos runs,
    each three to six times slower (2026-11-27). With `--dist load`,
    which hands out fixed chunks, one worker kept the chaos runs and ran 100 s after the others
    (2026-11-27). Keeping a file's, or the integration tier's, tests on one worker was measured
    slower (2026-11-24: 327 s against 215 s): the long chains then ran side by side, each slowed by
    the others. The sort is stable: within each rank, tests keep their collection order."""
    for item in items:
        folder = item.path.parent.name
        if folder in TIER_OF_FOLDER:
            item.add_marker(TIER_OF_FOLDER[folder])

    def rank(item: pytest.Item) -> int:
        return next((first for first, marker in enumerate(FIRST) if item.get_closest_marker(marker)), len(FIRST))

    items.sort(key=rank)
