"""Settings, parsed and checked once per cold start (`functions.shared.clients.default`).

The functions' environment variables (set by infra/python_function.py) are one typed model,
validated by pydantic (which the API's request validation already uses), so an invalid one fails
the first invocation with an error that names it, rather than a DynamoDB call failing later (a
`BETWEEN` with its bounds reversed is a ValidationException on AWS, and silently empty on some
emulators). An unset or empty variable takes its default.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from functions.core import schema
from functions.core.admission import ShardingSettings
from functions.core.leases import DEFAULT_TOMBSTONE_RETENTION
from functions.core.rate_limits import DEFAULT_TENANT_RATE, REQUESTS_PER_SECOND_PER_PART, TenantRate
from functions.core.sweeper import SweepSettings


class ConfigurationError(RuntimeError):
    pass


def _optional(check: Any) -> BeforeValidator:
    """Unset and empty variables are None (their default); anything else goes through `check`."""

    def validate(raw: Any) -> Any:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return None
        return check(raw.strip() if isinstance(raw, str) else raw)

    return BeforeValidator(validate)


def _whole(raw: Any) -> int:
    if not str(raw).isdigit():
        raise ValueError(f"must be a whole number, got {raw!r}")
    return int(raw)


def _whole_seconds(raw: Any) -> timedelta:
    if not str(raw).isdigit():
        raise ValueError(f"must be a whole number of seconds, got {raw!r}")
    return timedelta(seconds=int(raw))


def _positive_rate(raw: Any) -> float:
    try:
        rate = float(raw)
    except ValueError:
        rate = 0.0
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"must be a positive number of writes a second, got {raw!r}")
    return rate


Whole = Annotated[int | None, _optional(_whole)]
WholeSeconds = Annotated[timedelta | None, _optional(_whole_seconds)]
PositiveRate = Annotated[float | None, _optional(_positive_rate)]


class FunctionEnvironment(BaseModel):
    """The environment variables every function reads, by their names (functions/core/schema.py)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    table_name: Annotated[str, Field(validation_alias=schema.ENV_TABLE_NAME, min_length=1), BeforeValidator(str.strip)]
    pending_older_than: WholeSeconds = Field(None, validation_alias=schema.ENV_SWEEP_PENDING_OLDER_THAN_SECONDS)
    quiet: WholeSeconds = Field(None, validation_alias=schema.ENV_HEAL_QUIET_SECONDS)
    lookback: WholeSeconds = Field(None, validation_alias=schema.ENV_HEAL_LOOKBACK_SECONDS)
    tombstone_retention: WholeSeconds = Field(None, validation_alias=schema.ENV_TOMBSTONE_RETENTION_SECONDS)
    shard_grow_at: PositiveRate = Field(None, validation_alias=schema.ENV_SHARD_GROW_AT)
    rate_part_requests: PositiveRate = Field(None, validation_alias=schema.ENV_RATE_WINDOW_PART_REQUESTS)
    tenant_rate_limit: Whole = Field(None, validation_alias=schema.ENV_TENANT_RATE_LIMIT)
    tenant_window_seconds: Whole = Field(None, validation_alias=schema.ENV_TENANT_WINDOW_SECONDS)

    def sweep(self) -> SweepSettings:
        defaults = SweepSettings()
        return SweepSettings(
            pending_older_than=_or(self.pending_older_than, defaults.pending_older_than),
            quiet=_or(self.quiet, defaults.quiet),
            lookback=_or(self.lookback, defaults.lookback),
        )

    def tenant_rate(self) -> TenantRate:
        rate = DEFAULT_TENANT_RATE
        requests = rate.requests_per_second if self.tenant_rate_limit is None else self.tenant_rate_limit
        window = rate.window_seconds if self.tenant_window_seconds is None else self.tenant_window_seconds
        try:
            return TenantRate(requests_per_second=requests, window_seconds=window)
        except ValueError as error:
            names = f"{schema.ENV_TENANT_RATE_LIMIT} ({requests}) and {schema.ENV_TENANT_WINDOW_SECONDS} ({window})"
            raise ValueError(f"{names}: {error}") from error

    @model_validator(mode="after")
    def _consistent(self) -> FunctionEnvironment:
        sweep = self.sweep()
        if sweep.lookback <= sweep.quiet:
            raise ValueError(
                f"{schema.ENV_HEAL_LOOKBACK_SECONDS} ({int(sweep.lookback.total_seconds())} s) must be longer than "
                f"{schema.ENV_HEAL_QUIET_SECONDS} ({int(sweep.quiet.total_seconds())} s): the sweeper looks for "
                "accounts last written between those two ages"
            )
        retention = _or(self.tombstone_retention, DEFAULT_TOMBSTONE_RETENTION)
        if retention <= sweep.quiet:
            raise ValueError(
                f"{schema.ENV_TOMBSTONE_RETENTION_SECONDS} ({int(retention.total_seconds())} s) must be longer than "
                f"{schema.ENV_HEAL_QUIET_SECONDS} ({int(sweep.quiet.total_seconds())} s): a heal reads a tombstone "
                "to settle a lease older than the quiet period"
            )
        self.tenant_rate()
        return self


@dataclass(frozen=True)
class Settings:
    table_name: str
    sweep: SweepSettings = field(default_factory=SweepSettings)
    tombstone_retention: timedelta = DEFAULT_TOMBSTONE_RETENTION
    sharding: ShardingSettings = field(default_factory=ShardingSettings)
    tenant_rate: TenantRate = DEFAULT_TENANT_RATE
    rate_part_requests: float = REQUESTS_PER_SECOND_PER_PART

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings in `env` (the process's environment by default); ConfigurationError names
        the variable that is wrong and says why."""
        try:
            read = FunctionEnvironment.model_validate(dict(os.environ if env is None else env))
        except ValidationError as error:
            raise ConfigurationError(_explain(error)) from error
        sweep = read.sweep()
        retention = _or(read.tombstone_retention, DEFAULT_TOMBSTONE_RETENTION)
        # A write that sees dead leases settles them as the sweeper would: same age, same retention.
        sharding = ShardingSettings(dead_lease_age=sweep.quiet, tombstone_retention=retention)
        return cls(
            table_name=read.table_name,
            sweep=sweep,
            tombstone_retention=retention,
            sharding=sharding if read.shard_grow_at is None else replace(sharding, grow_at=read.shard_grow_at),
            tenant_rate=read.tenant_rate(),
            rate_part_requests=read.rate_part_requests or REQUESTS_PER_SECOND_PER_PART,  # None if not set; never 0
        )


def _or(value: timedelta | None, default: timedelta) -> timedelta:
    return default if value is None else value


def _explain(error: ValidationError) -> str:
    problems = []
    for problem in error.errors():
        message = str(problem["msg"]).removeprefix("Value error, ")
        variable = ".".join(str(part) for part in problem["loc"])
        if problem["type"] == "missing" or (
            variable == schema.ENV_TABLE_NAME and problem["type"] == "string_too_short"
        ):
            message = "must name the table"
        problems.append(f"environment variable {variable} {message}" if variable else message)
    return "; ".join(problems)
