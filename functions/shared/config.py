"""Settings, parsed and checked once per cold start (`functions.shared.clients.default`).

Every variable is validated where it is read, and an invalid one fails the first invocation with
an error that names it, rather than a DynamoDB call failing later (a `BETWEEN` with its bounds
reversed is a ValidationException on AWS, and silently empty on some emulators).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from functions.core import schema
from functions.core.admission import ShardingSettings
from functions.core.healing import DEFAULT_TOMBSTONE_RETENTION
from functions.core.rate_limits import DEFAULT_TENANT_RATE, TenantRate
from functions.core.sweeper import SweepSettings


class ConfigurationError(RuntimeError):
    pass


@dataclass(frozen=True)
class Settings:
    table_name: str
    sweep: SweepSettings = field(default_factory=SweepSettings)
    tombstone_retention: timedelta = DEFAULT_TOMBSTONE_RETENTION
    sharding: ShardingSettings = field(default_factory=ShardingSettings)
    tenant_rate: TenantRate = DEFAULT_TENANT_RATE

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        table_name = env.get(schema.ENV_TABLE_NAME, "").strip()
        if not table_name:
            raise ConfigurationError(f"environment variable {schema.ENV_TABLE_NAME} must name the table")
        sweep = sweep_settings(env)
        retention = _seconds(env, schema.ENV_TOMBSTONE_RETENTION_SECONDS, DEFAULT_TOMBSTONE_RETENTION)
        if retention <= sweep.quiet:
            raise ConfigurationError(
                f"{schema.ENV_TOMBSTONE_RETENTION_SECONDS} ({int(retention.total_seconds())} s) must be longer than "
                f"{schema.ENV_HEAL_QUIET_SECONDS} ({int(sweep.quiet.total_seconds())} s): a heal reads a tombstone "
                "to settle a lease older than the quiet period"
            )
        return cls(
            table_name=table_name,
            sweep=sweep,
            tombstone_retention=retention,
            sharding=sharding_settings(env),
            tenant_rate=tenant_rate(env),
        )


def sharding_settings(env: Mapping[str, str]) -> ShardingSettings:
    """How busy an admission shard gets before its account doubles its shards (docs/scaling.md)."""
    raw = env.get(schema.ENV_SHARD_GROW_AT, "").strip()
    if not raw:
        return ShardingSettings()
    try:
        grow_at = float(raw)
    except ValueError:
        grow_at = 0.0
    if not 0 < grow_at < float("inf"):
        raise ConfigurationError(
            f"environment variable {schema.ENV_SHARD_GROW_AT} must be a positive number of writes a second, got {raw!r}"
        )
    return ShardingSettings(grow_at=grow_at)


def tenant_rate(env: Mapping[str, str]) -> TenantRate:
    """Every account's rate limit unless an admin gave it its own (functions/core/rate_limits.py)."""
    rate = _whole(env, schema.ENV_TENANT_RATE_LIMIT, DEFAULT_TENANT_RATE.requests_per_second)
    window = _whole(env, schema.ENV_TENANT_WINDOW_SECONDS, DEFAULT_TENANT_RATE.window_seconds)
    try:
        return TenantRate(requests_per_second=rate, window_seconds=window)
    except ValueError as error:
        raise ConfigurationError(
            f"{schema.ENV_TENANT_RATE_LIMIT} ({rate}) and {schema.ENV_TENANT_WINDOW_SECONDS} ({window}): {error}"
        ) from error


def sweep_settings(env: Mapping[str, str] | None = None) -> SweepSettings:
    """The sweeper's settings; each variable is optional and must be a whole number of seconds."""
    env = os.environ if env is None else env
    defaults = SweepSettings()
    settings = SweepSettings(
        pending_older_than=_seconds(env, schema.ENV_SWEEP_PENDING_OLDER_THAN_SECONDS, defaults.pending_older_than),
        quiet=_seconds(env, schema.ENV_HEAL_QUIET_SECONDS, defaults.quiet),
        lookback=_seconds(env, schema.ENV_HEAL_LOOKBACK_SECONDS, defaults.lookback),
    )
    if settings.lookback <= settings.quiet:
        raise ConfigurationError(
            f"{schema.ENV_HEAL_LOOKBACK_SECONDS} ({int(settings.lookback.total_seconds())} s) must be longer than "
            f"{schema.ENV_HEAL_QUIET_SECONDS} ({int(settings.quiet.total_seconds())} s): the sweeper looks for "
            "accounts last written between those two ages"
        )
    return settings


def _whole(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ConfigurationError(f"environment variable {name} must be a whole number, got {raw!r}")
    return int(raw)


def _seconds(env: Mapping[str, str], name: str, default: timedelta) -> timedelta:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ConfigurationError(f"environment variable {name} must be a whole number of seconds, got {raw!r}")
    return timedelta(seconds=int(raw))
