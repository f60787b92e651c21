"""The wiring of a function: its SDK clients, the stores (adapters) built on them, its settings and
its clock, built once per execution environment.

Each handler takes a `Wiring` (`handler(event, context, wiring=...)`); Lambda passes none, and the
handler uses `default()`: boto3's default session and the settings in the function's environment,
built at the first invocation and reused by every later one. Tests and the operator CLI pass
their own, with their session, settings and clock, so nothing global is ever swapped.

Endpoints come from the standard AWS_ENDPOINT_URL variables, so the same code talks to AWS, to
LocalStack or to the local emulator.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, TypeVar

import boto3
from botocore.config import Config

from functions.adapters.api_store import DynamoApiStore
from functions.adapters.audit_reads import DynamoAuditReads
from functions.adapters.counting_store import DynamoCountingStore
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import watch_attempts
from functions.adapters.event_bus import EventBridgeBus
from functions.adapters.healing_store import DynamoHealingStore
from functions.adapters.offboarding_store import DynamoOffboardingStore
from functions.adapters.rate_windows import DynamoWindowStore
from functions.adapters.refused_windows import DynamoRefusedWindows, SqsAnnouncementQueue
from functions.adapters.rollout_queue import SqsRolloutQueue
from functions.adapters.streams import DynamoStreamReader
from functions.core.admission import Directory
from functions.core.rate_limits import TenantLimiter
from functions.shared.clock import Clock, clock_from_environment
from functions.shared.config import ConfigurationError, FunctionEnvironment, Settings

# Three attempts keep a throttled API call inside the API timeout (the SDK backs off with jitter).
# Every write's condition makes its retry harmless (docs/admission.md), so all calls may retry.
_STANDARD = Config(retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=2, read_timeout=5)

T = TypeVar("T")


class Wiring:
    """One execution environment's clients, stores and caches, each built on first use.

    `session` None means boto3's default session (what a Lambda function uses); `endpoint_url` None
    means the standard AWS_ENDPOINT_URL variables, or AWS; `clock` None means the system clock
    (functions/shared/clock.py), which every handler and store tells the time by. SDK clients
    are thread-safe and each one built costs start-up time, so every store shares one DynamoDB client;
    the shard directory and the rate limiter hold what this environment has learnt, so there is one
    of each. `service_endpoints` overrides `endpoint_url` per service (a test's DynamoDB may be
    DynamoDB Local while its queues are the emulator's)."""

    def __init__(
        self,
        settings: Settings,
        session: boto3.Session | None = None,
        endpoint_url: str | None = None,
        clock: Clock | None = None,
        service_endpoints: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.session = session
        self.endpoint_url = endpoint_url
        self.clock = clock or Clock()
        self.service_endpoints = dict(service_endpoints or {})
        self._built: dict[str, Any] = {}
        self._lock = threading.RLock()  # tests call handlers from several threads

    def _once(self, name: str, build: Callable[[], T]) -> T:
        with self._lock:
            if name not in self._built:
                self._built[name] = build()
            return self._built[name]  # type: ignore[no-any-return]

    def _client(self, service: str) -> Any:
        make = boto3.client if self.session is None else self.session.client
        return make(service, config=_STANDARD, endpoint_url=self.service_endpoints.get(service, self.endpoint_url))

    @property
    def dynamodb(self) -> Any:
        """The DynamoDB client, whose errors tell whether any attempt may have landed (watch_attempts)."""
        return self._once("dynamodb", lambda: watch_attempts(self._client("dynamodb")))

    @property
    def table(self) -> DynamoTable:
        """The table, through the DynamoDB client: what every store is built on."""
        return self._once("table", lambda: DynamoTable(self.dynamodb, self.settings.table_name))

    @property
    def streams(self) -> Any:
        return self._once("streams", lambda: self._client("dynamodbstreams"))

    @property
    def api_store(self) -> DynamoApiStore:
        return self._once("api_store", lambda: DynamoApiStore(self.table))

    @property
    def offboarding_store(self) -> DynamoOffboardingStore:
        """Accounts' deletions: the API's DELETE and the sweeper's erasure (functions/core/offboarding.py)."""
        return self._once("offboarding_store", lambda: DynamoOffboardingStore(self.table))

    @property
    def shard_directory(self) -> Directory:
        """What this execution environment has learnt of accounts' admission shards (a cache of hints)."""
        return self._once("shard_directory", lambda: Directory(self.settings.sharding))

    @property
    def tenant_limiter(self) -> TenantLimiter:
        """Per-tenant rate limits, with this execution environment's leases (functions/core/rate_limits.py)."""
        return self._once(
            "tenant_limiter",
            lambda: TenantLimiter(
                DynamoWindowStore(self.table),
                self.settings.tenant_rate,
                clock_ms=self.clock.epoch_ms,
                requests_per_part=self.settings.rate_part_requests,
            ),
        )

    @property
    def counting_store(self) -> DynamoCountingStore:
        return self._once(
            "counting_store",
            lambda: DynamoCountingStore(self.table, self.clock, self.settings.tombstone_retention),
        )

    @property
    def healing_store(self) -> DynamoHealingStore:
        return self._once("healing_store", lambda: DynamoHealingStore(self.table))

    @property
    def audit_reads(self) -> DynamoAuditReads:
        return self._once(
            "audit_reads",
            lambda: DynamoAuditReads(self.table, self.clock.now, self.settings.tombstone_retention),
        )

    @property
    def event_bus(self) -> EventBridgeBus:
        """The bus usage events go on (the publisher's: its environment names it)."""
        if self.settings.event_bus_name is None:
            variable = FunctionEnvironment.variable("event_bus_name")
            raise ConfigurationError(f"environment variable {variable} must be set")
        bus = self.settings.event_bus_name
        return self._once("event_bus", lambda: EventBridgeBus(self._client("events"), bus))

    @property
    def refused_windows(self) -> DynamoRefusedWindows:
        return self._once("refused_windows", lambda: DynamoRefusedWindows(self.table))

    @property
    def announcement_queue(self) -> SqsAnnouncementQueue:
        """The queue that has refused windows announced (the aggregator's: its environment names it)."""
        if self.settings.refusal_queue_url is None:
            variable = FunctionEnvironment.variable("refusal_queue_url")
            raise ConfigurationError(f"environment variable {variable} must be set")
        url = self.settings.refusal_queue_url
        return self._once("announcement_queue", lambda: SqsAnnouncementQueue(self._client("sqs"), url))

    @property
    def rollout_queue(self) -> SqsRolloutQueue:
        """The plan rollout's queue (the pager's and the worker's: their environment names it)."""
        if self.settings.rollout_queue_url is None:
            variable = FunctionEnvironment.variable("rollout_queue_url")
            raise ConfigurationError(f"environment variable {variable} must be set")
        url = self.settings.rollout_queue_url
        return self._once("rollout_queue", lambda: SqsRolloutQueue(self._client("sqs"), url))

    @property
    def stream_reader(self) -> DynamoStreamReader:
        return self._once("stream_reader", lambda: DynamoStreamReader(self.streams))


@lru_cache(maxsize=1)
def default() -> Wiring:
    """This execution environment's wiring: boto3's default session, settings from the environment,
    and the system clock (or the local runtime's shifted one, when it names one: clock.py)."""
    return Wiring(Settings.from_env(), clock=clock_from_environment())
