"""What a `HybridCounter` (infra/hybrid_counter.py) is built from: typed, checked when made, with the
defaults of the app's stack. The app reads them from CDK context (infra/settings.py); a user's own
CDK app writes them out.

A prop outside what AWS or the design allows is refused when the props are made, with its name
(`InvalidProps`), before any construct exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from urllib.parse import urlsplit

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from functions.core.rate_limits import DEFAULT_TENANT_RATE, TenantRate
from functions.shared.config import JwtSettings
from infra import constants


class InvalidProps(ValueError):
    """A prop refused: `owner.field reason`. `field` and `reason` let the app name its context key instead."""

    def __init__(self, owner: str, field_name: str, reason: str) -> None:
        super().__init__(f"{owner}.{field_name} {reason}")
        self.field_name = field_name
        self.reason = reason


def _whole(owner: str, field_name: str, value: object, least: int, most: int | None = None) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= least and (most is None or value <= most):
        return
    bounds = f"at least {least}" if most is None else f"from {least} to {most}"
    raise InvalidProps(owner, field_name, f"must be a whole number {bounds}, got {value!r}")


class ApiLogsRole(StrEnum):
    """API Gateway writes access and execution logs only through the region's CloudWatch role, one
    account-level setting (AWS::ApiGateway::Account) per region."""

    CREATE = constants.API_LOGS_ROLE_CREATE
    """Set it, with the role AWS prescribes, kept when the stack is deleted. One counter per region
    sets it: a second counter in the same account and region takes EXISTING."""
    EXISTING = constants.API_LOGS_ROLE_EXISTING
    """The account already has one."""
    NONE = constants.API_LOGS_ROLE_NONE
    """No API Gateway logs (the functions still log)."""


@dataclass(frozen=True)
class IamAuthorization:
    """Every method signed with SigV4 and allowed by the caller's IAM policy: a tenant role,
    assumed with a session tag naming one account, and an admin role (docs/security.md).

    `tenant_role_trusted_by`, `admin_role_trusted_by`: who may assume each role (its trust policy's
    principal, its conditions included; `iam.CompositePrincipal` for several). None: the deploying
    account, whose own IAM policies then decide (`HybridCounter.grant_assume_tenant_role` writes
    one). The tenant role's trust keeps its session-tag conditions whoever it trusts.
    """

    tenant_role_trusted_by: iam.IPrincipal | None = None
    admin_role_trusted_by: iam.IPrincipal | None = None


@dataclass(frozen=True)
class JwtAuthorization(JwtSettings):
    """Bearer tokens of an OIDC issuer, verified by a Lambda TOKEN authorizer, instead of SigV4:
    no tenant or admin role. `issuer` exactly as the issuer publishes it (a final `/` included);
    `tenant_claim` names the caller's account; `admin_scope` is a scope or Cognito group that may
    do everything (docs/security.md)."""

    tenant_claim: str = constants.DEFAULT_JWT_TENANT_CLAIM
    admin_scope: str = constants.DEFAULT_JWT_ADMIN_SCOPE

    def __post_init__(self) -> None:
        owner = type(self).__name__
        # Keys fetched over plain HTTP could be swapped on the way: only for an issuer on this machine.
        local = urlsplit(self.issuer).hostname in ("127.0.0.1", "localhost")
        if not (self.issuer.startswith("https://") or (self.issuer.startswith("http://") and local)):
            raise InvalidProps(owner, "issuer", f"must be an https:// URL, got {self.issuer!r}")
        for name in ("audience", "tenant_claim", "admin_scope"):
            if not getattr(self, name).strip():
                raise InvalidProps(owner, name, "must not be empty")


@dataclass(frozen=True)
class ExistingTable:
    """A table the counter uses without owning it, such as one restored from point-in-time recovery
    (docs/upgrade.md): its stream, TTL and indexes set as the counter's own."""

    name: str
    stream_arn: str

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidProps(type(self).__name__, "name", "must not be empty")
        if ":table/" not in self.stream_arn or "/stream/" not in self.stream_arn:
            raise InvalidProps(
                type(self).__name__, "stream_arn", f"must be a DynamoDB stream ARN, got {self.stream_arn!r}"
            )


@dataclass(frozen=True)
class UsageWebhook:
    """An HTTPS endpoint that receives every usage event, of each type, as an EventBridge API
    destination POSTs it (the event as the JSON body), with the API key kept in Secrets Manager:
    the secret's string is sent as header `header` (docs/events.md)."""

    url: str
    secret_arn: str
    header: str = constants.DEFAULT_USAGE_WEBHOOK_HEADER

    def __post_init__(self) -> None:
        owner = type(self).__name__
        local = urlsplit(self.url).hostname in ("127.0.0.1", "localhost")
        if not (self.url.startswith("https://") or (self.url.startswith("http://") and local)):
            raise InvalidProps(owner, "url", f"must be an https:// URL, got {self.url!r}")
        if not self.secret_arn.startswith("arn:") or ":secretsmanager:" not in self.secret_arn:
            raise InvalidProps(owner, "secret_arn", f"must be a Secrets Manager secret ARN, got {self.secret_arn!r}")
        if not self.header.strip():
            raise InvalidProps(owner, "header", "must not be empty")


_REMOVAL_POLICIES = (cdk.RemovalPolicy.RETAIN, cdk.RemovalPolicy.DESTROY)
_ARCHITECTURES = (constants.ARCHITECTURE_ARM64, constants.ARCHITECTURE_X86_64)


@dataclass(frozen=True)
class HybridCounterProps:
    """Every choice a deployer makes; each default is the app's (docs/deploy.md)."""

    authorization: IamAuthorization | JwtAuthorization = field(default_factory=IamAuthorization)
    # Subscribed to every alarm (the address must confirm). None: no subscription.
    alarm_email: str | None = None
    # Seconds the consumer's event source gathers stream records before it invokes (0-300): larger
    # batches fold more creates and deletes into each counter write; the eventual count lags as much.
    stream_batching_window_seconds: int = constants.DEFAULT_STREAM_BATCHING_WINDOW_SECONDS
    # Batches of one stream shard the consumer runs at once (1-10); each account's records stay in order.
    stream_parallelization_factor: int = constants.DEFAULT_STREAM_PARALLELIZATION_FACTOR
    # RETAIN (the table, queues and logs outlive the stack; the table has deletion protection) or
    # DESTROY (throw-away stacks).
    removal_policy: cdk.RemovalPolicy = cdk.RemovalPolicy.RETAIN
    # The EventBridge bus usage events go on (docs/events.md). None: a bus of the counter's own.
    event_bus: events.IEventBus | None = None
    # An HTTPS endpoint that receives every usage event. None: no webhook.
    usage_webhook: UsageWebhook | None = None
    # The stage's throttle, every method together: requests a second, and the burst bucket.
    api_rate_limit: int = constants.DEFAULT_API_RATE_LIMIT
    api_burst_limit: int = constants.DEFAULT_API_BURST_LIMIT
    # Every tenant's rate limit unless an admin gives it its own (functions/core/rate_limits.py).
    tenant_rate: TenantRate = DEFAULT_TENANT_RATE
    # How long a deleted resource's tombstone keeps its Idempotency-Key, at least an hour.
    idempotency_window_seconds: int = constants.TOMBSTONE_RETENTION_SECONDS
    # A cost guard on the on-demand table: DynamoDB throttles beyond it. None: no maximum.
    table_max_read_request_units: int | None = None
    table_max_write_request_units: int | None = None
    api_logs_role: ApiLogsRole = ApiLogsRole.CREATE
    # The functions' CPU, and the wheels bundled for it.
    architecture: lambda_.Architecture = field(default_factory=lambda: lambda_.Architecture.ARM_64)
    # None: a table of the counter's own.
    existing_table: ExistingTable | None = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _whole(
            owner,
            "stream_batching_window_seconds",
            self.stream_batching_window_seconds,
            0,
            constants.MAX_STREAM_BATCHING_WINDOW_SECONDS,
        )
        _whole(
            owner,
            "stream_parallelization_factor",
            self.stream_parallelization_factor,
            1,
            constants.MAX_STREAM_PARALLELIZATION_FACTOR,
        )
        _whole(owner, "api_rate_limit", self.api_rate_limit, 1)
        _whole(owner, "api_burst_limit", self.api_burst_limit, 0)
        _whole(
            owner,
            "idempotency_window_seconds",
            self.idempotency_window_seconds,
            constants.MIN_IDEMPOTENCY_WINDOW_SECONDS,
        )
        for name in ("table_max_read_request_units", "table_max_write_request_units"):
            if getattr(self, name) is not None:
                _whole(owner, name, getattr(self, name), 1)
        if self.removal_policy not in _REMOVAL_POLICIES:
            raise InvalidProps(owner, "removal_policy", f"must be RETAIN or DESTROY, got {self.removal_policy}")
        if self.architecture.name not in _ARCHITECTURES:
            raise InvalidProps(owner, "architecture", f"must be ARM_64 or X86_64, got {self.architecture.name!r}")
        if self.alarm_email is not None and "@" not in self.alarm_email:
            raise InvalidProps(owner, "alarm_email", f"must be an email address, got {self.alarm_email!r}")
