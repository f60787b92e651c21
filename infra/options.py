"""The deployer's options, each declared once: its context key (`-c key=value`), the prop it sets,
its default, its bounds and what it is.

From these come the checks of `HybridCounterProps` (infra/props.py), the app's reading of its
context (infra/settings.py) and the tables of docs/construct.md (scripts/construct_docs.py, which
`make lint` checks). A new option is one declaration here, its field in the props, and its use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Generic, Protocol, TypeVar

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from functions.core.rate_limits import DEFAULT_TENANT_RATE
from infra.outputs import DEFAULT_STACK_NAME


class Named(Protocol):
    """A choice's value: an enum member, or CDK's `Architecture`."""

    @property
    def name(self) -> str: ...


C = TypeVar("C", bound=Named, covariant=True)
# An option's default: a value, or None for an option unset unless given.
N = TypeVar("N", bound=int | None, covariant=True)
S = TypeVar("S", bound=str | None, covariant=True)


@dataclass(frozen=True)
class WholeNumber(Generic[N]):
    """A whole number from `least` to `most` (None: no most). Every option's `prop` is the field it
    sets: of `HybridCounterProps`, or of its prop's own type for a `PropOfSeveral`'s key."""

    key: str
    prop: str
    default: N
    least: int
    most: int | None
    doc: str

    def refusal(self, value: object) -> str | None:
        """Why the prop refuses `value`, or None if it takes it."""
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and value >= self.least
            and (self.most is None or value <= self.most)
        ):
            return None
        bounds = f"at least {self.least}" if self.most is None else f"from {self.least} to {self.most}"
        return f"must be a whole number {bounds}, got {value!r}"


@dataclass(frozen=True)
class Choice(Generic[C]):
    """One of a few values, each named in context by its key in `choices` (case and spaces ignored).
    Two values are the same choice when their `name`s are (CDK's `Architecture` objects are not
    equal to each other)."""

    key: str
    prop: str
    choices: Mapping[str, C]
    default: str
    doc: str

    @property
    def default_value(self) -> C:
        return self.choices[self.default]

    def named(self, given: object) -> C | None:
        """The value a context value names, or None."""
        return self.choices.get(str(given).strip().lower())

    def refusal(self, value: object) -> str | None:
        names = [choice.name for choice in self.choices.values()]
        name = getattr(value, "name", value)
        return None if name in names else f"must be {' or '.join(names)}, got {name!r}"


@dataclass(frozen=True)
class Text(Generic[S]):
    """A string."""

    key: str
    prop: str
    default: S
    doc: str


@dataclass(frozen=True)
class EmailAddress:
    """An address to send mail to (None: none)."""

    key: str
    prop: str
    doc: str

    def refusal(self, value: str | None) -> str | None:
        return None if value is None or "@" in value else f"must be an email address, got {value!r}"


@dataclass(frozen=True)
class PropOfSeveral:
    """A prop of a type of its own, which the app builds from several context keys (infra/settings.py
    reads them; the type checks itself). `default` as the docs show it."""

    prop: str
    default: str
    doc: str
    keys: tuple[WholeNumber[int | None] | Choice[Named] | Text[str | None], ...]


@dataclass(frozen=True)
class AppOption:
    """A context key of the app itself, not of the counter's props."""

    key: str
    default: str
    doc: str


class ApiLogsRole(StrEnum):
    """API Gateway writes access and execution logs only through the region's CloudWatch role, one
    account-level setting (AWS::ApiGateway::Account) per region."""

    CREATE = "create"
    """Set it, with the role AWS prescribes, kept when the stack is deleted. One counter per region
    sets it: a second counter in the same account and region takes EXISTING."""
    EXISTING = "existing"
    """The account already has one."""
    NONE = "none"
    """No API Gateway logs (the functions still log)."""


class Authorizer(StrEnum):
    """Who may call the API (`-c authorizer=`)."""

    IAM = "iam"
    JWT = "jwt"


# --- the props set by one key each ------------------------------------------------------------------

ALARM_EMAIL: Final = EmailAddress(
    "alarmEmail",
    "alarm_email",
    "subscribed to every alarm (the address must confirm), and to usage threshold crossings ([events.md](events.md))",
)
STREAM_BATCHING_WINDOW: Final = WholeNumber(
    "streamBatchingWindowSeconds",
    "stream_batching_window_seconds",
    default=0,
    least=0,
    most=300,  # Lambda's MaximumBatchingWindowInSeconds
    doc="seconds the consumer's event source gathers stream records before it invokes: larger batches fold "
    "more creates and deletes into each counter write, and the eventual count lags as much "
    "([scaling.md](scaling.md))",
)
STREAM_PARALLELIZATION: Final = WholeNumber(
    "streamParallelizationFactor",
    "stream_parallelization_factor",
    default=1,
    least=1,
    most=10,  # Lambda's ParallelizationFactor
    doc="batches of one stream shard the consumer runs at once. Lambda keeps each partition key's records "
    "in order within one lane, and an account's resources share its partition key, so the consumer sees "
    "each resource's create before its delete at any factor",
)
REMOVAL_POLICY: Final = Choice(
    "removalPolicy",
    "removal_policy",
    {"retain": cdk.RemovalPolicy.RETAIN, "destroy": cdk.RemovalPolicy.DESTROY},
    default="retain",
    doc="RETAIN: the table, queues and logs outlive the stack, and the table has deletion protection. "
    "DESTROY: for throw-away stacks",
)
API_RATE_LIMIT: Final = WholeNumber(
    "apiRateLimit",
    "api_rate_limit",
    default=10_000,  # the account's own default
    least=1,
    most=None,
    doc="the stage's throttle, every method together, in requests a second: the outer guard in front of the "
    "function and the table; API Gateway answers 429 beyond it",
)
API_BURST_LIMIT: Final = WholeNumber(
    "apiBurstLimit",
    "api_burst_limit",
    default=5_000,  # the account's own default
    least=0,
    most=None,
    doc="the stage throttle's burst bucket",
)
# A counted delete's tombstone is kept a day by default, far beyond any retry or late invocation.
IDEMPOTENCY_WINDOW: Final = WholeNumber(
    "idempotencyWindowSeconds",
    "idempotency_window_seconds",
    default=24 * 3600,
    least=3600,
    most=None,
    doc="how long a deleted resource's tombstone keeps its `Idempotency-Key` (and a heal can still read it)",
)
TABLE_MAX_READS: Final = WholeNumber(
    "tableMaxReadRequestUnits",
    "table_max_read_request_units",
    default=None,
    least=1,
    most=None,
    doc="a cost cap on the on-demand table's reads: DynamoDB throttles beyond it (OnDemandThroughput); "
    "unset, the table scales to the account's quotas",
)
TABLE_MAX_WRITES: Final = WholeNumber(
    "tableMaxWriteRequestUnits",
    "table_max_write_request_units",
    default=None,
    least=1,
    most=None,
    doc="the same cap on its writes",
)
API_LOGS_ROLE: Final = Choice(
    "apiGatewayCloudWatchRole",
    "api_logs_role",
    {role.value: role for role in ApiLogsRole},
    default=ApiLogsRole.CREATE.value,
    doc="the region's API Gateway CloudWatch role, through which alone API Gateway writes its logs (an "
    "account-level setting): CREATE sets it, with the role AWS prescribes, kept when the stack is deleted "
    "(one counter per account and region); EXISTING: the account has one; NONE: no API Gateway logs (the "
    "functions still log)",
)
ARCHITECTURE: Final = Choice(
    "architecture",
    "architecture",
    {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64},
    default="arm64",
    doc="the functions' CPU, and the wheels bundled for it (x86_64 for emulators such as LocalStack on x86_64 hosts)",
)

# --- the props the app builds from several keys ---------------------------------------------------------

AUTHORIZER: Final = Choice(
    "authorizer",
    "authorization",
    {authorizer.value: authorizer for authorizer in Authorizer},
    default=Authorizer.IAM.value,
    doc="`iam`: SigV4, tenants by session tag; `jwt`: an OIDC issuer's bearer tokens, checked by a "
    "Lambda TOKEN authorizer",
)
JWT_ISSUER: Final = Text(
    "jwtIssuer", "issuer", None, "with `jwt`, required: the issuer exactly as it publishes itself (`https://`)"
)
JWT_AUDIENCE: Final = Text("jwtAudience", "audience", None, "with `jwt`, required: the tokens' audience")
JWT_TENANT_CLAIM: Final = Text("jwtTenantClaim", "tenant_claim", "tenant", "with `jwt`: the claim naming the account")
JWT_ADMIN_SCOPE: Final = Text(
    "jwtAdminScope",
    "admin_scope",
    "counter/admin",
    "with `jwt`: the scope or Cognito group that may do everything",
)
AUTHORIZATION: Final = PropOfSeveral(
    "authorization",
    "`IamAuthorization()`",
    "`IamAuthorization(tenant_role_trusted_by=, admin_role_trusted_by=)`: SigV4 with the tenant and admin "
    "roles ([security.md](security.md)). Each role trusts the given principal, with that principal's "
    "conditions (None: the deploying account). The tenant role keeps its session-tag conditions. Or "
    "`JwtAuthorization(issuer, audience, tenant_claim=, admin_scope=)`: an OIDC issuer's bearer tokens, "
    "checked by a token authorizer, and no roles (`https://` issuer)",
    (AUTHORIZER, JWT_ISSUER, JWT_AUDIENCE, JWT_TENANT_CLAIM, JWT_ADMIN_SCOPE),
)

TENANT_RATE_LIMIT: Final = WholeNumber(
    "tenantRateLimit",
    "requests_per_second",
    default=DEFAULT_TENANT_RATE.requests_per_second,
    least=1,
    most=None,
    doc="every tenant's rate limit, in requests a second, unless an admin gave it its own: the function "
    "answers 429 `TenantThrottled` beyond it, for that tenant only",
)
TENANT_BURST_SECONDS: Final = WholeNumber(
    "tenantBurstSeconds",
    "window_seconds",
    default=DEFAULT_TENANT_RATE.window_seconds,
    least=1,
    most=None,
    doc="the windows of that limit: `tenantRateLimit` times this may come at once",
)
TENANT_RATE: Final = PropOfSeveral(
    "tenant_rate",
    f"{DEFAULT_TENANT_RATE.requests_per_second:,}/s over {DEFAULT_TENANT_RATE.window_seconds} s",
    "every tenant's default rate limit (`functions.core.rate_limits.TenantRate`), a tenth of the stage's "
    "default rate ([security.md](security.md))",
    (TENANT_RATE_LIMIT, TENANT_BURST_SECONDS),
)

EXISTING_TABLE_NAME: Final = Text("tableName", "name", None, "with `tableStreamArn`: a table the stack uses")
EXISTING_TABLE_STREAM: Final = Text("tableStreamArn", "stream_arn", None, "with `tableName`: its stream's ARN")
EXISTING_TABLE: Final = PropOfSeveral(
    "existing_table",
    "None",
    "`ExistingTable(name, stream_arn)`: a table the counter uses without owning it, such as one restored "
    "from point-in-time recovery ([upgrade.md](upgrade.md#running-on-a-table-restored-from-point-in-time-recovery))",
    (EXISTING_TABLE_NAME, EXISTING_TABLE_STREAM),
)

USAGE_WEBHOOK_URL: Final = Text(
    "usageWebhookUrl", "url", None, "with `usageWebhookSecretArn`: the HTTPS endpoint every usage event is POSTed to"
)
USAGE_WEBHOOK_SECRET: Final = Text(
    "usageWebhookSecretArn", "secret_arn", None, "with `usageWebhookUrl`: the Secrets Manager secret of its API key"
)
USAGE_WEBHOOK_HEADER: Final = Text("usageWebhookHeader", "header", "x-api-key", "the header the API key is sent as")
USAGE_WEBHOOK: Final = PropOfSeveral(
    "usage_webhook",
    "None",
    "`UsageWebhook(url, secret_arn, header=)`: an HTTPS endpoint an EventBridge API destination POSTs every "
    "usage event to, with the secret's string as header `header` ([events.md](events.md))",
    (USAGE_WEBHOOK_URL, USAGE_WEBHOOK_SECRET, USAGE_WEBHOOK_HEADER),
)

EVENT_BUS: Final = PropOfSeveral(
    "event_bus",
    "None",
    "an `events.IEventBus` of yours that usage events go on ([events.md](events.md)); None: a bus of the counter's own",
    (),
)

# --- the app's own keys -------------------------------------------------------------------------------

STACK_NAME: Final = AppOption("stackName", DEFAULT_STACK_NAME, "the stack's name")
SKIP_BUNDLING: Final = AppOption(
    "skipBundling",
    "false",
    "`true`: synthesize without building the functions' package (no network needed). The CLI asks for "
    "bundling on every synth and deploy and has no switch of its own to turn it off",
)
# CDK's own context key listing the stacks whose assets are bundled (an empty list bundles none).
CDK_BUNDLING_STACKS_CONTEXT_KEY: Final = "aws:cdk:bundling-stacks"

# Every option, in the order the docs show them.
WHOLE_NUMBERS: Final = (
    STREAM_BATCHING_WINDOW,
    STREAM_PARALLELIZATION,
    API_RATE_LIMIT,
    API_BURST_LIMIT,
    IDEMPOTENCY_WINDOW,
    TABLE_MAX_READS,
    TABLE_MAX_WRITES,
)
CHOICES: Final = (REMOVAL_POLICY, API_LOGS_ROLE, ARCHITECTURE)
PROPS: Final[tuple[WholeNumber[int | None] | Choice[Named] | EmailAddress | PropOfSeveral, ...]] = (
    AUTHORIZATION,
    ALARM_EMAIL,
    STREAM_BATCHING_WINDOW,
    STREAM_PARALLELIZATION,
    REMOVAL_POLICY,
    API_RATE_LIMIT,
    API_BURST_LIMIT,
    TENANT_RATE,
    IDEMPOTENCY_WINDOW,
    TABLE_MAX_READS,
    TABLE_MAX_WRITES,
    API_LOGS_ROLE,
    ARCHITECTURE,
    EXISTING_TABLE,
    USAGE_WEBHOOK,
    EVENT_BUS,
)
APP_OPTIONS: Final = (STACK_NAME, SKIP_BUNDLING)
