"""What sets each function of the counter apart (infra/python_function.py builds each from one),
and the settings every function's code is given.

No CDK here: `python -m ops` reads the timeouts and the heal's quiet time without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# Every function's Powertools settings (the dashboard and alarms read its metrics by these).
POWERTOOLS_SERVICE_NAME: Final = "hybrid-counter"
POWERTOOLS_METRICS_NAMESPACE: Final = "HybridCounter"
LOG_LEVEL: Final = "INFO"

# An account's counters are healed once it has had no write for this long (the API function's and
# the sweeper's heal, `python -m ops`): six times the API function's timeout.
HEAL_QUIET_SECONDS: Final = 60


@dataclass(frozen=True)
class FunctionSettings:
    """One function: its construct id (stable: it feeds the logical ids), its handler (relative to
    the asset root that holds the `functions` package), its timeout, its memory and its description."""

    construct_id: str
    handler: str
    timeout_seconds: int
    memory_mb: int
    description: str


API_FUNCTION: Final = FunctionSettings(
    "ApiFunction", "functions.api.handler.handler", 10, 256, "Accounts and resources HTTP API"
)
STREAM_CONSUMER_FUNCTION: Final = FunctionSettings(
    "StreamConsumerFunction",
    "functions.stream_consumer.handler.handler",
    30,
    512,
    "Applies resource creates and deletes from the table stream to the eventual counters",
)
REDRIVE_FUNCTION: Final = FunctionSettings(
    "RedriveFunction",
    "functions.redrive.handler.handler",
    60,
    512,
    "Re-reads failed stream ranges from DLQ 1 and applies them to the counters",
)
SWEEPER_FUNCTION: Final = FunctionSettings(
    "SweeperFunction",
    "functions.sweeper.handler.handler",
    300,
    512,
    "Applies resources pending too long and heals the counters of quiet accounts",
)
EVENT_PUBLISHER_FUNCTION: Final = FunctionSettings(
    "EventPublisherFunction",
    "functions.event_publisher.handler.handler",
    30,
    256,
    "Puts the usage events the consumer wrote to the outbox on the event bus",
)
REFUSAL_AGGREGATOR_FUNCTION: Final = FunctionSettings(
    "RefusalAggregatorFunction",
    "functions.refusal_aggregator.handler.handler",
    30,
    256,
    "Counts the API's refused creates, from its log lines, per quota and minute",
)
REFUSAL_EMITTER_FUNCTION: Final = FunctionSettings(
    "RefusalEmitterFunction",
    "functions.refusal_emitter.handler.handler",
    REFUSAL_AGGREGATOR_FUNCTION.timeout_seconds,
    REFUSAL_AGGREGATOR_FUNCTION.memory_mb,
    "Writes each minute's Limit Refused event to the outbox once the minute is over",
)
PLAN_PAGER_FUNCTION: Final = FunctionSettings(
    "PlanPagerFunction",
    "functions.plan_rollout.handler.pager",
    60,
    256,
    "Pages a changed plan's accounts in the registry onto the rollout queue",
)
PLAN_WORKER_FUNCTION: Final = FunctionSettings(
    "PlanWorkerFunction",
    "functions.plan_rollout.handler.worker",
    60,
    256,
    "Gives each account of a rollout message its plan's new version",
)
# Sized as the API function, in front of which it runs.
AUTHORIZER_FUNCTION: Final = FunctionSettings(
    "AuthorizerFunction",
    "functions.authorizer.handler.handler",
    API_FUNCTION.timeout_seconds,
    API_FUNCTION.memory_mb,
    "Verifies bearer JWTs for the HTTP API",
)
