"""Names and settings of the stack that tests, tools and docs refer to.

Kept in one place so a renamed output or a changed retry bound shows up in the template, the tests
and the local runtime (which reads the event source settings from the template) together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# Stack
DEFAULT_STACK_NAME: Final = "HybridCounter"
STACK_NAME_CONTEXT_KEY: Final = "stackName"

# Context read by the stack.
REMOVAL_POLICY_CONTEXT_KEY: Final = "removalPolicy"
REMOVAL_POLICY_RETAIN: Final = "retain"
REMOVAL_POLICY_DESTROY: Final = "destroy"
DEFAULT_REMOVAL_POLICY: Final = REMOVAL_POLICY_RETAIN
# CPU architecture of every function and of the wheels in their package (`-c architecture=x86_64`
# for emulators such as LocalStack on x86_64 hosts); the values are Lambda's own names.
ARCHITECTURE_CONTEXT_KEY: Final = "architecture"
ARCHITECTURE_ARM64: Final = "arm64"
ARCHITECTURE_X86_64: Final = "x86_64"
DEFAULT_ARCHITECTURE: Final = ARCHITECTURE_ARM64
# `-c streamBatchingWindowSeconds=2`: the consumer's event source gathers stream records for up to
# this long before it invokes (MaximumBatchingWindowInSeconds, 0-300). Larger batches fold more
# creates and deletes into each counter write (docs/scaling.md); the eventual count lags by as much.
STREAM_BATCHING_WINDOW_CONTEXT_KEY: Final = "streamBatchingWindowSeconds"
DEFAULT_STREAM_BATCHING_WINDOW_SECONDS: Final = 0
MAX_STREAM_BATCHING_WINDOW_SECONDS: Final = 300
# The stage's throttle, every method together (`-c apiRateLimit=2000 -c apiBurstLimit=1000`): the outer
# guard in front of the function and the table. API Gateway answers 429 beyond it ("Throttle API
# requests for better throughput"); the account's own default is 10,000 requests/s, burst 5,000.
API_RATE_LIMIT_CONTEXT_KEY: Final = "apiRateLimit"
API_BURST_LIMIT_CONTEXT_KEY: Final = "apiBurstLimit"
DEFAULT_API_RATE_LIMIT: Final = 10_000
DEFAULT_API_BURST_LIMIT: Final = 5_000
# Every tenant's rate limit unless an admin gave it its own (`-c tenantRateLimit=1000
# -c tenantBurstSeconds=2`: 1,000 requests/s over 2 s windows, so 2,000 may come at once): the
# function answers 429 TenantThrottled beyond it, for that tenant only (functions/core/rate_limits.py,
# docs/security.md). Default: a tenth of the stage's rate, in 2 s windows.
TENANT_RATE_LIMIT_CONTEXT_KEY: Final = "tenantRateLimit"
TENANT_BURST_SECONDS_CONTEXT_KEY: Final = "tenantBurstSeconds"
# Who may call the API. `iam` (default): SigV4 for service callers, tenants by session tag
# (infra/access.py). `jwt`: bearer tokens of an OIDC issuer for end users calling directly
# (`-c jwtIssuer=https://... -c jwtAudience=...`; `jwtTenantClaim`, default `tenant`, names the
# caller's account; `jwtAdminScope`, default `counter/admin`, a scope or Cognito group that may do
# everything), checked by a Lambda TOKEN authorizer (infra/jwt_authorizer.py).
AUTHORIZER_CONTEXT_KEY: Final = "authorizer"
AUTHORIZER_IAM: Final = "iam"
AUTHORIZER_JWT: Final = "jwt"
JWT_ISSUER_CONTEXT_KEY: Final = "jwtIssuer"
JWT_AUDIENCE_CONTEXT_KEY: Final = "jwtAudience"
JWT_TENANT_CLAIM_CONTEXT_KEY: Final = "jwtTenantClaim"
JWT_ADMIN_SCOPE_CONTEXT_KEY: Final = "jwtAdminScope"
DEFAULT_JWT_TENANT_CLAIM: Final = "tenant"
DEFAULT_JWT_ADMIN_SCOPE: Final = "counter/admin"
# API Gateway caches an authorizer's policy per token this long (0 to 3600 s).
AUTHORIZER_CACHE_SECONDS: Final = 300
# API Gateway writes access and execution logs only through the region's CloudWatch role, an
# account-level setting (AWS::ApiGateway::Account). `create` (default): this stack sets it, with
# the role AWS prescribes, kept when the stack is deleted; `existing`: the account already has one;
# `none`: no API Gateway logs (the functions still log).
API_LOGS_ROLE_CONTEXT_KEY: Final = "apiGatewayCloudWatchRole"
API_LOGS_ROLE_CREATE: Final = "create"
API_LOGS_ROLE_EXISTING: Final = "existing"
API_LOGS_ROLE_NONE: Final = "none"
# Run on a table the stack does not own, such as one restored from point-in-time recovery
# (`-c tableName=NAME -c tableStreamArn=ARN`, both together; docs/upgrade.md, "Running on a table restored
# from point-in-time recovery").
EXISTING_TABLE_NAME_CONTEXT_KEY: Final = "tableName"
EXISTING_TABLE_STREAM_CONTEXT_KEY: Final = "tableStreamArn"
# A cost guard on the on-demand table (`-c tableMaxWriteRequestUnits=40000`): DynamoDB throttles the
# table beyond it (OnDemandThroughput). Unset, the table scales to the account's quotas.
TABLE_MAX_WRITES_CONTEXT_KEY: Final = "tableMaxWriteRequestUnits"
TABLE_MAX_READS_CONTEXT_KEY: Final = "tableMaxReadRequestUnits"
# `-c skipBundling=true` synthesizes without building the Lambda package (no PyPI access needed).
# The CLI always asks for bundling on synth/deploy and offers no switch to turn it off.
SKIP_BUNDLING_CONTEXT_KEY: Final = "skipBundling"
# CDK's own context key listing the stacks whose assets are bundled (an empty list bundles none).
CDK_BUNDLING_STACKS_CONTEXT_KEY: Final = "aws:cdk:bundling-stacks"

# Construct ids (stable: they feed the CloudFormation logical ids).
# The app stack's counter: CDK leaves a `Default` id out of logical ids, so the counter's resources
# keep the ids the stack gave them when it built them itself.
COUNTER_CONSTRUCT_ID: Final = "Default"
DATA_CONSTRUCT_ID: Final = "Data"
DEAD_LETTERS_CONSTRUCT_ID: Final = "DeadLetters"
COUNTING_CONSTRUCT_ID: Final = "Counting"
API_CONSTRUCT_ID: Final = "Api"
TABLE_ID: Final = "Table"
DLQ1_ID: Final = "StreamFailureQueue"
DLQ2_ID: Final = "RedriveFailureQueue"
DLQ2_ALARM_ID: Final = "RedriveFailureQueueNotEmpty"
API_FUNCTION_ID: Final = "ApiFunction"
STREAM_CONSUMER_FUNCTION_ID: Final = "StreamConsumerFunction"
REDRIVE_FUNCTION_ID: Final = "RedriveFunction"
REST_API_ID: Final = "RestApi"
ACCESS_CONSTRUCT_ID: Final = "Access"
TOKEN_AUTHORIZER_CONSTRUCT_ID: Final = "TokenAuthorizer"  # noqa: S105 - a construct id
AUTHORIZER_FUNCTION_ID: Final = "AuthorizerFunction"
MONITORING_CONSTRUCT_ID: Final = "Monitoring"
ALARM_TOPIC_ID: Final = "AlarmTopic"
DASHBOARD_ID: Final = "Dashboard"
# `-c alarmEmail=ops@example.com` subscribes that address to every alarm (it must confirm).
ALARM_EMAIL_CONTEXT_KEY: Final = "alarmEmail"
TENANT_ROLE_ID: Final = "TenantRole"
ADMIN_ROLE_ID: Final = "AdminRole"

# Authorization (docs/security.md): the session tag that names a tenant role session's account.
TENANT_TAG_KEY: Final = "tenant"

# Stack outputs (top-level CfnOutputs, so the logical id is exactly the name).
OUTPUT_API_URL: Final = "ApiUrl"
OUTPUT_TABLE_NAME: Final = "TableName"
OUTPUT_STREAM_ARN: Final = "StreamArn"
OUTPUT_DLQ1_URL: Final = "Dlq1Url"
OUTPUT_DLQ2_URL: Final = "Dlq2Url"
OUTPUT_DLQ1_ARN: Final = "Dlq1Arn"
OUTPUT_DLQ2_ARN: Final = "Dlq2Arn"
OUTPUT_DLQ2_ALARM_NAME: Final = "Dlq2AlarmName"
OUTPUT_TENANT_ROLE_ARN: Final = "TenantRoleArn"
OUTPUT_ADMIN_ROLE_ARN: Final = "AdminRoleArn"
OUTPUT_TENANT_TAG_KEY: Final = "TenantTagKey"
OUTPUT_ALARM_TOPIC_ARN: Final = "AlarmTopicArn"
OUTPUT_DASHBOARD_NAME: Final = "DashboardName"

# Handlers, relative to the asset root that holds the `functions` package.
API_HANDLER: Final = "functions.api.handler.handler"
STREAM_CONSUMER_HANDLER: Final = "functions.stream_consumer.handler.handler"
REDRIVE_HANDLER: Final = "functions.redrive.handler.handler"
AUTHORIZER_HANDLER: Final = "functions.authorizer.handler.handler"

# Function settings
API_TIMEOUT_SECONDS: Final = 10
STREAM_CONSUMER_TIMEOUT_SECONDS: Final = 30
REDRIVE_TIMEOUT_SECONDS: Final = 60
API_MEMORY_MB: Final = 256
STREAM_CONSUMER_MEMORY_MB: Final = 512
REDRIVE_MEMORY_MB: Final = 512
POWERTOOLS_SERVICE_NAME: Final = "hybrid-counter"
POWERTOOLS_METRICS_NAMESPACE: Final = "HybridCounter"
LOG_LEVEL: Final = "INFO"

# Stream event source of the consumer.
STREAM_BATCH_SIZE: Final = 100
STREAM_MAX_RETRY_ATTEMPTS: Final = 5
STREAM_MAX_RECORD_AGE_SECONDS: Final = 3600
STREAM_BISECT_BATCH_ON_ERROR: Final = True
# Concurrent batches per stream shard (`-c streamParallelizationFactor=N`, 1-10): Lambda keeps each
# partition key's records in order within one lane, and an account's resources share its
# partition key, so the consumer sees each resource's create before its delete at any factor.
STREAM_PARALLELIZATION_CONTEXT_KEY: Final = "streamParallelizationFactor"
DEFAULT_STREAM_PARALLELIZATION_FACTOR: Final = 1
MAX_STREAM_PARALLELIZATION_FACTOR: Final = 10

# Dead-letter queues and the redrive.
DLQ_RETENTION_DAYS: Final = 14
DLQ1_MAX_RECEIVE_COUNT: Final = 5
# AWS recommends a queue visibility timeout of at least 6x the consuming function's timeout, so a
# message is not handed out again while an invocation (plus its throttling retries) may still run.
DLQ1_VISIBILITY_TIMEOUT_FACTOR: Final = 6
REDRIVE_BATCH_SIZE: Final = 10
DLQ2_ALARM_THRESHOLD: Final = 1
DLQ2_ALARM_PERIOD_MINUTES: Final = 1

# REST API
API_STAGE_NAME: Final = "prod"

# Sweeper: a scheduled safety net that applies old pending work and heals quiet accounts.
SWEEPER_CONSTRUCT_ID: Final = "Sweeper"
SWEEPER_FUNCTION_ID: Final = "SweeperFunction"
SWEEPER_SCHEDULE_ID: Final = "SweeperSchedule"
SWEEPER_HANDLER: Final = "functions.sweeper.handler.handler"
SWEEPER_TIMEOUT_SECONDS: Final = 300
SWEEPER_MEMORY_MB: Final = 512
SWEEPER_RATE_MINUTES: Final = 5
SWEEP_PENDING_OLDER_THAN_SECONDS: Final = 300  # the stream and the redrive get five minutes first
HEAL_QUIET_SECONDS: Final = 60  # six times the API function's timeout
HEAL_LOOKBACK_SECONDS: Final = 6 * 3600
# How long a counted delete's tombstone is kept: a day, far beyond any retry or late invocation.
TOMBSTONE_RETENTION_SECONDS: Final = 24 * 3600
# The Idempotency-Key window (`-c idempotencyWindowSeconds=172800`): how long a counted delete's
# tombstone keeps its key (and a heal can still read it), at least an hour.
IDEMPOTENCY_WINDOW_CONTEXT_KEY: Final = "idempotencyWindowSeconds"
MIN_IDEMPOTENCY_WINDOW_SECONDS: Final = 3600
OUTPUT_SWEEPER_FUNCTION: Final = "SweeperFunctionName"

# Usage events (infra/events.py, docs/events.md): the bus, the publisher that puts the outbox's events
# on it, the dead-letter queue of the batches it gave up on, and the log group the bus's events are
# kept in for `python -m ops events`.
EVENTS_CONSTRUCT_ID: Final = "UsageEvents"
EVENT_BUS_ID: Final = "UsageEventBus"
EVENT_PUBLISHER_FUNCTION_ID: Final = "EventPublisherFunction"
EVENT_PUBLISHER_HANDLER: Final = "functions.event_publisher.handler.handler"
EVENT_PUBLISHER_TIMEOUT_SECONDS: Final = 30
EVENT_PUBLISHER_MEMORY_MB: Final = 256
EVENTS_DLQ_ID: Final = "EventsFailureQueue"
EVENTS_DLQ_ALARM_ID: Final = "EventsFailureQueueNotEmpty"
EVENTS_LOG_ID: Final = "UsageEventsLog"
EVENTS_LOG_RULE_ID: Final = "UsageEventsToLog"
# `-c usageWebhookUrl=https://... -c usageWebhookSecretArn=arn:aws:secretsmanager:...`: every usage
# event is POSTed to the URL by an EventBridge API destination, the secret's string
# sent as the header `usageWebhookHeader` (default x-api-key).
USAGE_WEBHOOK_URL_CONTEXT_KEY: Final = "usageWebhookUrl"
USAGE_WEBHOOK_SECRET_CONTEXT_KEY: Final = "usageWebhookSecretArn"  # noqa: S105 - a context key
USAGE_WEBHOOK_HEADER_CONTEXT_KEY: Final = "usageWebhookHeader"
DEFAULT_USAGE_WEBHOOK_HEADER: Final = "x-api-key"
USAGE_WEBHOOK_ID: Final = "UsageWebhook"
# With `-c alarmEmail`: threshold crossings to the alarm topic as well.
EVENTS_TO_ALARM_TOPIC_RULE_ID: Final = "UsageThresholdsToAlarmTopic"
EVENTS_LOG_RETENTION_DAYS: Final = 30
OUTPUT_EVENT_BUS_NAME: Final = "EventBusName"
OUTPUT_EVENT_BUS_ARN: Final = "EventBusArn"
OUTPUT_EVENTS_DLQ_URL: Final = "EventsDlqUrl"
OUTPUT_EVENTS_DLQ_ALARM_NAME: Final = "EventsDlqAlarmName"
OUTPUT_EVENTS_LOG_GROUP: Final = "EventsLogGroupName"

# Limit Refused events (infra/refusals.py, docs/events.md): the subscription filter on the API's log
# group, the aggregator it invokes, the queue of windows to announce, the emitter reading it, and the
# dead-letter queue of both.
REFUSALS_CONSTRUCT_ID: Final = "LimitRefusals"
REFUSAL_FILTER_ID: Final = "RefusalLines"
REFUSAL_AGGREGATOR_FUNCTION_ID: Final = "RefusalAggregatorFunction"
REFUSAL_AGGREGATOR_HANDLER: Final = "functions.refusal_aggregator.handler.handler"
REFUSAL_EMITTER_FUNCTION_ID: Final = "RefusalEmitterFunction"
REFUSAL_EMITTER_HANDLER: Final = "functions.refusal_emitter.handler.handler"
REFUSAL_TIMEOUT_SECONDS: Final = 30
REFUSAL_MEMORY_MB: Final = 256
REFUSED_WINDOWS_QUEUE_ID: Final = "RefusedWindowsQueue"
REFUSED_WINDOWS_MAX_RECEIVE_COUNT: Final = 5
REFUSAL_EMITTER_BATCH_SIZE: Final = 10
REFUSALS_DLQ_ID: Final = "RefusalsFailureQueue"
REFUSALS_DLQ_ALARM_ID: Final = "RefusalsFailureQueueNotEmpty"
OUTPUT_REFUSALS_DLQ_URL: Final = "RefusalsDlqUrl"
OUTPUT_REFUSAL_AGGREGATOR_FUNCTION: Final = "RefusalAggregatorFunctionName"


@dataclass(frozen=True)
class FunctionSettings:
    """What sets one function apart (infra/python_function.py builds each from one): its construct
    id (stable: it feeds the logical ids), its handler, its timeout, its memory and its description."""

    construct_id: str
    handler: str
    timeout_seconds: int
    memory_mb: int
    description: str


API_FUNCTION: Final = FunctionSettings(
    API_FUNCTION_ID, API_HANDLER, API_TIMEOUT_SECONDS, API_MEMORY_MB, "Accounts and resources HTTP API"
)
STREAM_CONSUMER_FUNCTION: Final = FunctionSettings(
    STREAM_CONSUMER_FUNCTION_ID,
    STREAM_CONSUMER_HANDLER,
    STREAM_CONSUMER_TIMEOUT_SECONDS,
    STREAM_CONSUMER_MEMORY_MB,
    "Applies resource creates and deletes from the table stream to the eventual counters",
)
REDRIVE_FUNCTION: Final = FunctionSettings(
    REDRIVE_FUNCTION_ID,
    REDRIVE_HANDLER,
    REDRIVE_TIMEOUT_SECONDS,
    REDRIVE_MEMORY_MB,
    "Re-reads failed stream ranges from DLQ 1 and applies them to the counters",
)
SWEEPER_FUNCTION: Final = FunctionSettings(
    SWEEPER_FUNCTION_ID,
    SWEEPER_HANDLER,
    SWEEPER_TIMEOUT_SECONDS,
    SWEEPER_MEMORY_MB,
    "Applies resources pending too long and heals the counters of quiet accounts",
)
EVENT_PUBLISHER_FUNCTION: Final = FunctionSettings(
    EVENT_PUBLISHER_FUNCTION_ID,
    EVENT_PUBLISHER_HANDLER,
    EVENT_PUBLISHER_TIMEOUT_SECONDS,
    EVENT_PUBLISHER_MEMORY_MB,
    "Puts the usage events the consumer wrote to the outbox on the event bus",
)
REFUSAL_AGGREGATOR_FUNCTION: Final = FunctionSettings(
    REFUSAL_AGGREGATOR_FUNCTION_ID,
    REFUSAL_AGGREGATOR_HANDLER,
    REFUSAL_TIMEOUT_SECONDS,
    REFUSAL_MEMORY_MB,
    "Counts the API's refused creates, from its log lines, per quota and minute",
)
REFUSAL_EMITTER_FUNCTION: Final = FunctionSettings(
    REFUSAL_EMITTER_FUNCTION_ID,
    REFUSAL_EMITTER_HANDLER,
    REFUSAL_TIMEOUT_SECONDS,
    REFUSAL_MEMORY_MB,
    "Writes each minute's Limit Refused event to the outbox once the minute is over",
)
# Sized as the API function, in front of which it runs.
AUTHORIZER_FUNCTION: Final = FunctionSettings(
    AUTHORIZER_FUNCTION_ID,
    AUTHORIZER_HANDLER,
    API_TIMEOUT_SECONDS,
    API_MEMORY_MB,
    "Verifies bearer JWTs for the HTTP API",
)
