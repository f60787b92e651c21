from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import pytest

from functions.adapters import keys
from functions.core.model import Quota
from tests.conftest import System, fresh_system, on_dynamodb_local
from tests.support.api_events import ApiClient
from tests.support.faults import Faults
from tests.support.stream import StreamTap, deliver, failed_sequence_numbers
from tests.support.truth import AccountTruth, assert_invariants, read_truth


@pytest.fixture(scope="session")
def dynamodb_url(request: pytest.FixtureRequest) -> str:
    """What serves DynamoDB to this tier: moto's server, or DynamoDB Local with `--emulator
    dynamodb-local` (tests/conftest.py)."""
    fixture = "dynamodb_local_url" if on_dynamodb_local(request.config) else "emulator_url"
    return str(request.getfixturevalue(fixture))


@pytest.fixture
def system(dynamodb_url: str, request: pytest.FixtureRequest) -> System:
    return fresh_system(dynamodb_url, shared=on_dynamodb_local(request.config))


class Harness:
    """The API, the stream and the consumer of one test's system, its clock, plus the truth about the table."""

    def __init__(self, system: System) -> None:
        from functions.api.handler import handler as api_handler
        from functions.stream_consumer.handler import handler as consumer_handler

        self.system = system
        self.clients = system.clients
        self.clock = system.clock
        self.api = ApiClient(partial(api_handler, clients=system.clients), system.clock)
        self.consumer = partial(consumer_handler, clients=system.clients)
        self.faults = Faults(system.clients)
        self.tap = StreamTap(system.streams, system.stream_arn)

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
        return read_truth(self.system.dynamodb, self.system.table).get(keys.account_pk(quota), AccountTruth())

    def check_invariants(self) -> None:
        assert_invariants(self.system.dynamodb, self.system.table)


@pytest.fixture
def harness(system: System) -> Iterator[Harness]:
    return Harness(system)
