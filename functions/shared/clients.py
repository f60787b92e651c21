"""boto3 clients and adapters, built once per execution environment and reused across calls.

Endpoints come from the standard AWS_ENDPOINT_URL variables, so the same code talks to AWS, to
LocalStack or to the local emulator.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import boto3
from botocore.config import Config

from functions.adapters.dynamodb import DynamoApiStore, DynamoCountingStore, DynamoHealingStore
from functions.adapters.errors import watch_attempts
from functions.adapters.rate_windows import DynamoWindowStore
from functions.adapters.streams import DynamoStreamReader
from functions.core.admission import Directory
from functions.core.rate_limits import TenantLimiter
from functions.shared.config import Settings

# Three attempts keep a throttled API call inside the API timeout (the SDK backs off with jitter).
# Every write's condition makes its retry harmless (docs/admission.md), so all calls may retry.
_STANDARD = Config(retries={"mode": "standard", "total_max_attempts": 3}, connect_timeout=2, read_timeout=5)


@lru_cache(maxsize=1)
def settings() -> Settings:
    return Settings.from_env()


@lru_cache(maxsize=1)
def dynamodb_client() -> Any:
    """The one DynamoDB client of this execution environment, shared by every store (clients are
    thread-safe; each built costs start-up time), whose errors tell whether any attempt may have
    landed (watch_attempts)."""
    return watch_attempts(boto3.client("dynamodb", config=_STANDARD))


@lru_cache(maxsize=1)
def api_store() -> DynamoApiStore:
    return DynamoApiStore(dynamodb_client(), settings().table_name)


@lru_cache(maxsize=1)
def shard_directory() -> Directory:
    """What this execution environment has learnt of accounts' admission shards (a cache of hints)."""
    return Directory(settings().sharding)


@lru_cache(maxsize=1)
def tenant_limiter() -> TenantLimiter:
    """Per-tenant rate limits, with this execution environment's leases (functions/core/rate_limits.py)."""
    store = DynamoWindowStore(dynamodb_client(), settings().table_name)
    return TenantLimiter(store, settings().tenant_rate)


@lru_cache(maxsize=1)
def counting_store() -> DynamoCountingStore:
    return DynamoCountingStore(dynamodb_client(), settings().table_name, settings().tombstone_retention)


@lru_cache(maxsize=1)
def healing_store() -> DynamoHealingStore:
    return DynamoHealingStore(dynamodb_client(), settings().table_name)


@lru_cache(maxsize=1)
def stream_reader() -> DynamoStreamReader:
    return DynamoStreamReader(boto3.client("dynamodbstreams", config=_STANDARD))


def reset() -> None:
    """Forget cached clients (tests point them at a fresh emulator)."""
    for cached in (
        settings,
        dynamodb_client,
        api_store,
        shard_directory,
        tenant_limiter,
        counting_store,
        healing_store,
        stream_reader,
    ):
        cached.cache_clear()
