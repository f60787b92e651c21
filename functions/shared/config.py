"""The functions' environment contract, and their settings parsed and checked once per cold start
(`functions.shared.wiring.default`).

Every environment variable a function reads is a field of one typed model, `FunctionEnvironment`,
under the variable's name. The stack builds each function's environment from it
(infra/python_function.py: `variables()`), and the functions read it back with it, so a variable
renamed here is renamed for both. Validated by pydantic (which the API's request validation already
uses), an invalid variable fails the first invocation with an error that names it, rather than a
DynamoDB call failing later (a `BETWEEN` with its bounds reversed is a ValidationException on AWS,
and silently empty on some emulators). An unset or empty variable takes its default.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from functions.core.admission import ShardingSettings
from functions.core.leases import DEFAULT_TOMBSTONE_RETENTION
from functions.core.model import REQUESTS_PER_SECOND_PER_PART, TenantRate
from functions.core.rate_limits import DEFAULT_TENANT_RATE
from functions.core.refusals import DEFAULT_GRACE
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
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return raw
    if not str(raw).isdigit():
        raise ValueError(f"must be a whole number, got {raw!r}")
    return int(raw)


def _whole_seconds(raw: Any) -> timedelta:
    if isinstance(raw, timedelta) and raw >= timedelta(0) and raw == timedelta(seconds=int(raw.total_seconds())):
        return raw
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
    """Every environment variable a function reads, each field under its variable's name.

    Built by field name (the stack: `FunctionEnvironment(table_name=..., quiet=...)`), it gives the
    variables to deploy (`variables()`); read from an environment by variable name (the functions:
    `from_env`), it gives the settings."""

    model_config = ConfigDict(frozen=True, extra="ignore", validate_by_name=True, validate_by_alias=True)

    table_name: Annotated[str, Field(validation_alias="TABLE_NAME", min_length=1), BeforeValidator(str.strip)]
    # The sweeper's: how old pending work must be before it applies it, how long an account must be
    # free of API writes before `admitted` is healed, and how far back to look for unhealed accounts.
    pending_older_than: WholeSeconds = Field(default=None, validation_alias="SWEEP_PENDING_OLDER_THAN_SECONDS")
    quiet: WholeSeconds = Field(default=None, validation_alias="HEAL_QUIET_SECONDS")
    lookback: WholeSeconds = Field(default=None, validation_alias="HEAL_LOOKBACK_SECONDS")
    # How long a tombstone is kept (the Idempotency-Key window).
    tombstone_retention: WholeSeconds = Field(default=None, validation_alias="TOMBSTONE_RETENTION_SECONDS")
    # The API's: writes a second on one admission shard before its account doubles its shards, and
    # requests a second of a tenant's rate per part of its rate window (1,000 unless the partition
    # limits are scaled).
    shard_grow_at: PositiveRate = Field(default=None, validation_alias="SHARD_GROW_AT_WRITES_PER_SECOND")
    rate_part_requests: PositiveRate = Field(default=None, validation_alias="RATE_WINDOW_PART_REQUESTS_PER_SECOND")
    # The API's default tenant rate (the stack's tenantRateLimit and tenantBurstSeconds).
    tenant_rate_limit: Whole = Field(default=None, validation_alias="TENANT_RATE_LIMIT")
    tenant_window_seconds: Whole = Field(default=None, validation_alias="TENANT_RATE_WINDOW_SECONDS")
    # The JWT authorizer's (`-c authorizer=jwt`), exactly as configured: the issuer and audience
    # tokens must have, the claim naming the caller's account, and the scope (or Cognito group) of
    # an admin.
    jwt_issuer: str | None = Field(default=None, validation_alias="JWT_ISSUER")
    jwt_audience: str | None = Field(default=None, validation_alias="JWT_AUDIENCE")
    jwt_tenant_claim: str | None = Field(default=None, validation_alias="JWT_TENANT_CLAIM")
    jwt_admin_scope: str | None = Field(default=None, validation_alias="JWT_ADMIN_SCOPE")
    # The event publisher's: the EventBridge bus it puts usage events on (infra/usage_events.py).
    event_bus_name: str | None = Field(default=None, validation_alias="EVENT_BUS_NAME")
    # The refusal aggregator's (infra/refusals.py): the queue that has refused windows announced, and
    # how long after its minute a window is announced (functions/core/refusals.py, DEFAULT_GRACE).
    refusal_queue_url: str | None = Field(default=None, validation_alias="REFUSAL_QUEUE_URL")
    refusal_grace: WholeSeconds = Field(default=None, validation_alias="REFUSAL_GRACE_SECONDS")
    # The plan rollout's pager and worker (infra/plan_rollout.py): the queue of its messages.
    rollout_queue_url: str | None = Field(default=None, validation_alias="ROLLOUT_QUEUE_URL")

    @classmethod
    def variable(cls, field_name: str) -> str:
        """The name of the environment variable that holds `field_name`."""
        return str(cls.model_fields[field_name].validation_alias)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> FunctionEnvironment:
        """The variables of `env` (the process's environment by default); ConfigurationError names
        the variable that is wrong and says why."""
        try:
            return cls.model_validate(dict(os.environ if env is None else env), by_alias=True, by_name=False)
        except ValidationError as error:
            raise ConfigurationError(_explain(error)) from error

    def variables(self) -> dict[str, str]:
        """These settings as the stack deploys them: every variable set, by its name, as text."""
        return {self.variable(name): _as_text(value) for name, value in self if value is not None}

    def jwt(self) -> JwtSettings:
        """The JWT authorizer's settings; ConfigurationError names one that is not set."""
        fields = ("jwt_issuer", "jwt_audience", "jwt_tenant_claim", "jwt_admin_scope")
        values = [getattr(self, name) for name in fields]
        missing = [self.variable(name) for name, value in zip(fields, values, strict=True) if value is None]
        if missing:
            raise ConfigurationError(f"environment variable {', '.join(missing)} must be set for the JWT authorizer")
        return JwtSettings(*values)

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
            limit, seconds = self.variable("tenant_rate_limit"), self.variable("tenant_window_seconds")
            names = f"{limit} ({requests}) and {seconds} ({window})"
            raise ValueError(f"{names}: {error}") from error

    @model_validator(mode="after")
    def _consistent(self) -> FunctionEnvironment:
        sweep = self.sweep()
        if sweep.lookback <= sweep.quiet:
            raise ValueError(
                f"{self.variable('lookback')} ({int(sweep.lookback.total_seconds())} s) must be longer than "
                f"{self.variable('quiet')} ({int(sweep.quiet.total_seconds())} s): the sweeper looks for "
                "accounts last written between those two ages"
            )
        retention = _or(self.tombstone_retention, DEFAULT_TOMBSTONE_RETENTION)
        if retention <= sweep.quiet:
            raise ValueError(
                f"{self.variable('tombstone_retention')} ({int(retention.total_seconds())} s) must be longer than "
                f"{self.variable('quiet')} ({int(sweep.quiet.total_seconds())} s): a heal reads a tombstone "
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
    event_bus_name: str | None = None
    refusal_queue_url: str | None = None
    refusal_grace: timedelta = DEFAULT_GRACE
    rollout_queue_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings in `env` (the process's environment by default); ConfigurationError names
        the variable that is wrong and says why."""
        read = FunctionEnvironment.from_env(env)
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
            event_bus_name=read.event_bus_name,
            refusal_queue_url=read.refusal_queue_url,
            refusal_grace=_or(read.refusal_grace, DEFAULT_GRACE),
            rollout_queue_url=read.rollout_queue_url,
        )


@dataclass(frozen=True)
class JwtSettings:
    """The JWT authorizer's settings (`-c authorizer=jwt`): as the stack reads them from its context
    (infra/settings.py) and as the function reads them back from its environment."""

    issuer: str
    audience: str
    tenant_claim: str
    admin_scope: str


def _as_text(value: object) -> str:
    """A setting as its environment variable holds it: seconds and counts as whole numbers."""
    if isinstance(value, timedelta):
        return str(int(value.total_seconds()))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _or(value: timedelta | None, default: timedelta) -> timedelta:
    return default if value is None else value


def _explain(error: ValidationError) -> str:
    problems = []
    for problem in error.errors():
        message = str(problem["msg"]).removeprefix("Value error, ")
        variable = ".".join(str(part) for part in problem["loc"])
        if problem["type"] == "missing" or (
            variable == FunctionEnvironment.variable("table_name") and problem["type"] == "string_too_short"
        ):
            message = "must name the table"
        problems.append(f"environment variable {variable} {message}" if variable else message)
    return "; ".join(problems)
