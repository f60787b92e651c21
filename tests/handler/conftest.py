from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest
from hybrid_counter_client import LimitsClient

from functions.adapters import keys
from functions.core.model import DEFAULT_RESOURCE_TYPE, Quota
from tests.conftest import Backend, fresh_backend, on_dynamodb_local
from tests.support.api_events import ApiClient, ApiResponse, resources_url
from tests.support.faults import Faults
from tests.support.stream import StreamTap, deliver, failed_sequence_numbers
from tests.support.truth import AccountTruth, assert_invariants, read_truth

if TYPE_CHECKING:
    from tests.handler.client_bridge import Bridge


def dynamodb_url_of(request: pytest.FixtureRequest) -> str:
    """What serves DynamoDB to the asking test (or module): moto's server, or DynamoDB Local
    (`--emulator`, tests/conftest.py)."""
    on_engine = on_dynamodb_local(request.config, request.node)
    return str(request.getfixturevalue("dynamodb_local_url" if on_engine else "emulator_url"))


@pytest.fixture
def dynamodb_url(request: pytest.FixtureRequest) -> str:
    return dynamodb_url_of(request)


@pytest.fixture
def backend(dynamodb_url: str, request: pytest.FixtureRequest) -> Iterator[Backend]:
    """This test's table, stream and wiring, on what `dynamodb_url` serves. On moto's server the
    next test's reset empties it; DynamoDB Local keeps it, so it is dropped when the test ends."""
    shared = on_dynamodb_local(request.config, request.node)
    made = fresh_backend(dynamodb_url, shared=shared)
    yield made
    if shared:
        made.drop()


@pytest.fixture
def faults(backend: Backend) -> Faults:
    """Failure injection on this test's wiring (tests/support/faults.py)."""
    return Faults(backend.wiring)


class Harness:
    """The API, the stream and the consumer of one test's backend, its clock, plus the truth about the table."""

    def __init__(self, backend: Backend) -> None:
        from functions.api.handler import handler as api_handler
        from functions.stream_consumer.handler import handler as consumer_handler

        self.backend = backend
        self.wiring = backend.wiring
        self.clock = backend.clock
        self.api = ApiClient(partial(api_handler, wiring=backend.wiring), backend.clock)
        self.consumer = partial(consumer_handler, wiring=backend.wiring)
        self.faults = Faults(backend.wiring)
        self.tap = StreamTap(backend.streams, backend.stream_arn)

    def deliver(self, records: list[dict]) -> list[str]:
        """Invoke the consumer with these records; returns the sequence numbers it reported failed."""
        return failed_sequence_numbers(deliver(self.consumer, records)) if records else []

    def pump(self, rounds: int = 5) -> None:
        """Deliver stream records until the stream is quiet (the consumer's own writes add more)."""
        for _ in range(rounds):
            records = self.tap.drain()
            if not records:
                return
            assert self.deliver(records) == []
        raise AssertionError(f"stream still busy after {rounds} rounds")

    def truth(self, account: str | Quota) -> AccountTruth:
        """One quota's truth: an account id is its default type's."""
        quota = account if isinstance(account, Quota) else Quota(account)
        return read_truth(self.backend.dynamodb, self.backend.table).get(keys.account_pk(quota), AccountTruth())

    def check_invariants(self) -> None:
        assert_invariants(self.backend.dynamodb, self.backend.table)


@pytest.fixture
def harness(backend: Backend) -> Iterator[Harness]:
    return Harness(backend)


class Kind:
    """The quota of account `acme` a test of an invariant works on, through the API: its default
    type (the routes without a type), or its type `seats`. Beside `seats`, the account's default
    type holds a bystander resource, counted, which the test must leave exactly as it was: a
    type's writes, heals and counts never take, free or heal another type's slot."""

    ACCOUNT = "acme"
    BYSTANDER = AccountTruth(live=1, processed=1, existing=1, best_effort_net=1, admitted=1, room=1, eventual=1)

    def __init__(self, harness: Harness, resource_type: str | None) -> None:
        self.harness = harness
        self.resource_type = resource_type
        self.quota = Quota(self.ACCOUNT, resource_type or DEFAULT_RESOURCE_TYPE)
        self.resources_url = resources_url(self.ACCOUNT, resource_type)
        self.url = f"/accounts/{self.ACCOUNT}" + (f"/types/{resource_type}" if resource_type else "")

    def __repr__(self) -> str:
        return self.resource_type or DEFAULT_RESOURCE_TYPE

    def put(self, limit: int) -> ApiResponse:
        api = self.harness.api
        if self.resource_type is None:
            return api.put_account(self.ACCOUNT, limit)
        if api.request("GET", f"/accounts/{self.ACCOUNT}").status == 404:
            assert api.put_account(self.ACCOUNT, 2).status == 200
            assert api.create(self.ACCOUNT, "bystander").status == 201
            self.harness.pump()
        return api.put_type(self.ACCOUNT, self.resource_type, limit)

    def create(self, name: str = "r", key: str | None = None, **attributes: Any) -> ApiResponse:
        return self.harness.api.create(self.ACCOUNT, name, key, self.resource_type, **attributes)

    def delete(self, resource_id: str) -> ApiResponse:
        return self.harness.api.delete(self.ACCOUNT, resource_id, self.resource_type)

    def read(self) -> dict[str, Any]:
        """The quota's view: the account's, or the type's (the same counters)."""
        response = self.harness.api.request("GET", self.url)
        assert response.status == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    def truth(self) -> AccountTruth:
        return self.harness.truth(self.quota)

    def check_bystander(self) -> None:
        if (
            self.resource_type is not None
            and self.harness.api.request("GET", f"/accounts/{self.ACCOUNT}").status == 200
        ):
            truth = self.harness.truth(Quota(self.ACCOUNT))
            assert replace(truth, limit=0, shards=0, counters=0) == self.BYSTANDER, truth


@pytest.fixture(params=[None, "seats"], ids=["default", "seats"])
def kind(harness: Harness, request: pytest.FixtureRequest) -> Iterator[Kind]:
    """Each test that asks for it runs on the default type and on a type beside it."""
    chosen = Kind(harness, request.param)
    yield chosen
    chosen.check_bystander()


@pytest.fixture
def bridge(kind: Kind) -> Iterator[Bridge]:
    """The real handler served over HTTP on 127.0.0.1, for the Python client (tests/handler/client_bridge.py)."""
    from tests.handler.client_bridge import Bridge  # it imports Kind from here

    served = Bridge(kind)
    yield served
    served.close()


@pytest.fixture
def client(bridge: Bridge) -> Iterator[LimitsClient]:
    """The Python client of the bridge, waiting on a fake clock between its attempts."""
    from tests.client.conftest import Waits, static_session

    waits = Waits()
    with LimitsClient(bridge.url, static_session(), clock=waits.clock, sleep=waits.sleep) as made:
        yield made
