"""What a `HybridCounter` (infra/hybrid_counter.py) is built from: typed, checked when made, with the
defaults of the app's stack. Each option, its default and its bounds are declared once in
infra/options.py; the app reads them from CDK context (infra/settings.py); a user's own CDK app
writes them out.

A prop outside what AWS or the design allows is refused when the props are made, with its name
(`InvalidProps`), before any construct exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from functions.core.model import TenantRate
from functions.core.rate_limits import DEFAULT_TENANT_RATE
from functions.shared.config import JwtSettings
from infra import options
from infra.options import ApiLogsRole as ApiLogsRole  # part of the props' API: `from infra.props import ApiLogsRole`


class InvalidProps(ValueError):
    """A prop refused: `owner.field reason`. `field` and `reason` let the app name its context key instead."""

    def __init__(self, owner: str, field_name: str, reason: str) -> None:
        super().__init__(f"{owner}.{field_name} {reason}")
        self.field_name = field_name
        self.reason = reason


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

    tenant_claim: str = options.JWT_TENANT_CLAIM.default
    admin_scope: str = options.JWT_ADMIN_SCOPE.default

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
    header: str = options.USAGE_WEBHOOK_HEADER.default

    def __post_init__(self) -> None:
        owner = type(self).__name__
        local = urlsplit(self.url).hostname in ("127.0.0.1", "localhost")
        if not (self.url.startswith("https://") or (self.url.startswith("http://") and local)):
            raise InvalidProps(owner, "url", f"must be an https:// URL, got {self.url!r}")
        if not self.secret_arn.startswith("arn:") or ":secretsmanager:" not in self.secret_arn:
            raise InvalidProps(owner, "secret_arn", f"must be a Secrets Manager secret ARN, got {self.secret_arn!r}")
        if not self.header.strip():
            raise InvalidProps(owner, "header", "must not be empty")


@dataclass(frozen=True)
class HybridCounterProps:
    """Every choice a deployer makes; each default is the app's (infra/options.py says what each is,
    docs/construct.md shows it)."""

    authorization: IamAuthorization | JwtAuthorization = field(default_factory=IamAuthorization)
    alarm_email: str | None = None
    stream_batching_window_seconds: int = options.STREAM_BATCHING_WINDOW.default
    stream_parallelization_factor: int = options.STREAM_PARALLELIZATION.default
    removal_policy: cdk.RemovalPolicy = options.REMOVAL_POLICY.default_value
    event_bus: events.IEventBus | None = None
    usage_webhook: UsageWebhook | None = None
    api_rate_limit: int = options.API_RATE_LIMIT.default
    api_burst_limit: int = options.API_BURST_LIMIT.default
    tenant_rate: TenantRate = DEFAULT_TENANT_RATE
    idempotency_window_seconds: int = options.IDEMPOTENCY_WINDOW.default
    table_max_read_request_units: int | None = options.TABLE_MAX_READS.default
    table_max_write_request_units: int | None = options.TABLE_MAX_WRITES.default
    api_logs_role: ApiLogsRole = options.API_LOGS_ROLE.default_value
    architecture: lambda_.Architecture = field(default_factory=lambda: options.ARCHITECTURE.default_value)
    existing_table: ExistingTable | None = None

    def __post_init__(self) -> None:
        for option in options.WHOLE_NUMBERS:
            value = getattr(self, option.prop)
            if value is None and option.default is None:
                continue
            if (refusal := option.refusal(value)) is not None:
                raise InvalidProps(type(self).__name__, option.prop, refusal)
        for check in (*options.CHOICES, options.ALARM_EMAIL):
            if (refusal := check.refusal(getattr(self, check.prop))) is not None:
                raise InvalidProps(type(self).__name__, check.prop, refusal)
