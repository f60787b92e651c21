"""The app's stack: one `HybridCounter` with the deployer's context as its props, and its outputs
under the names tests, tools and docs refer to (infra/outputs.py)."""

from __future__ import annotations

from typing import Any, Final

import aws_cdk as cdk
from constructs import Construct

from infra import options, settings
from infra.bundling import PipRunner, run_pip
from infra.hybrid_counter import HybridCounter
from infra.outputs import (
    DEFAULT_STACK_NAME,
    OUTPUT_ADMIN_ROLE_ARN,
    OUTPUT_ALARM_TOPIC_ARN,
    OUTPUT_API_URL,
    OUTPUT_DASHBOARD_NAME,
    OUTPUT_DLQ1_ARN,
    OUTPUT_DLQ1_URL,
    OUTPUT_DLQ2_ALARM_NAME,
    OUTPUT_DLQ2_ARN,
    OUTPUT_DLQ2_URL,
    OUTPUT_EVENT_BUS_ARN,
    OUTPUT_EVENT_BUS_NAME,
    OUTPUT_EVENTS_DLQ_ALARM_NAME,
    OUTPUT_EVENTS_DLQ_URL,
    OUTPUT_EVENTS_LOG_GROUP,
    OUTPUT_REFUSAL_AGGREGATOR_FUNCTION,
    OUTPUT_REFUSALS_DLQ_URL,
    OUTPUT_STREAM_ARN,
    OUTPUT_SWEEPER_FUNCTION,
    OUTPUT_TABLE_NAME,
    OUTPUT_TENANT_ROLE_ARN,
    OUTPUT_TENANT_TAG_KEY,
)

# The app stack's counter: CDK leaves a `Default` id out of logical ids, so the counter's resources
# keep the ids the stack gave them when it built them itself.
COUNTER_CONSTRUCT_ID: Final = "Default"


class HybridCounterStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str = DEFAULT_STACK_NAME,
        pip: PipRunner = run_pip,
        **kwargs: Any,
    ) -> None:
        """`pip` runs the bundler's pip install (tests give one that records it)."""
        super().__init__(scope, construct_id, **kwargs)
        if settings.skip_bundling(self):
            # Must happen before any child exists (CDK refuses context changes after that); assets
            # then point at the unbuilt source folder, which is fine for synth-only use.
            self.node.set_context(options.CDK_BUNDLING_STACKS_CONTEXT_KEY, [])

        # `Default`: CDK leaves the id out of the logical ids, so the counter's resources keep the
        # ids they had when the stack built them itself, and a deployed stack updates in place.
        counter = HybridCounter(self, COUNTER_CONSTRUCT_ID, settings.props_from_context(self), pip=pip)

        # Outputs live on the stack itself so their logical ids are exactly the constant names.
        outputs = {
            OUTPUT_API_URL: (counter.api_url, "Base URL of the HTTP API (stage included)"),
            OUTPUT_TABLE_NAME: (counter.table.table_name, "DynamoDB table"),
            OUTPUT_STREAM_ARN: (
                counter.table_stream_arn,
                "Stream read by the consumer, re-read by the redrive",
            ),
            OUTPUT_DLQ1_URL: (
                counter.dlq1.queue_url,
                "DLQ 1: failed stream batches, drained by the redrive function",
            ),
            OUTPUT_DLQ1_ARN: (counter.dlq1.queue_arn, "DLQ 1 ARN"),
            OUTPUT_DLQ2_URL: (
                counter.dlq2.queue_url,
                "DLQ 2: batches the redrive could not apply; for operators",
            ),
            OUTPUT_DLQ2_ARN: (counter.dlq2.queue_arn, "DLQ 2 ARN"),
            OUTPUT_SWEEPER_FUNCTION: (
                counter.sweeper_function.function_name,
                "Scheduled sweeper (ops sweep runs it)",
            ),
            OUTPUT_DLQ2_ALARM_NAME: (
                counter.dlq2_alarm.alarm_name,
                "Alarm raised when DLQ 2 holds a message",
            ),
            OUTPUT_ALARM_TOPIC_ARN: (
                counter.alarm_topic.topic_arn,
                "Every alarm publishes here; subscribe to it",
            ),
            OUTPUT_DASHBOARD_NAME: (counter.dashboard.dashboard_name, "CloudWatch dashboard"),
            OUTPUT_EVENT_BUS_NAME: (counter.event_bus.event_bus_name, "EventBridge bus of the usage events"),
            OUTPUT_EVENT_BUS_ARN: (counter.event_bus.event_bus_arn, "Usage events bus ARN"),
            OUTPUT_EVENTS_DLQ_URL: (
                counter.events_dlq.queue_url,
                "Usage events the publisher gave up on; ops events replay puts them again",
            ),
            OUTPUT_EVENTS_DLQ_ALARM_NAME: (
                counter.events_dlq_alarm.alarm_name,
                "Alarm raised when the usage events' dead-letter queue holds a message",
            ),
            OUTPUT_REFUSALS_DLQ_URL: (
                counter.refusals_dlq.queue_url,
                "Refused creates not counted, or minutes not announced, as Limit Refused events",
            ),
            OUTPUT_REFUSAL_AGGREGATOR_FUNCTION: (
                counter.refusal_aggregator_function.function_name,
                "Counts refused creates per minute (ops events refusals replay reads its settings)",
            ),
            OUTPUT_EVENTS_LOG_GROUP: (
                counter.events_log_group.log_group_name,
                "Every usage event put on the bus (ops events tails it)",
            ),
        }
        if counter.tenant_role is not None and counter.admin_role is not None:
            outputs |= {
                OUTPUT_TENANT_ROLE_ARN: (
                    counter.tenant_role.role_arn,
                    f"Assume with the session tag {counter.tenant_tag_key}=<account id> to call that account's paths",
                ),
                OUTPUT_ADMIN_ROLE_ARN: (counter.admin_role.role_arn, "Assume to call every path, set limits"),
                OUTPUT_TENANT_TAG_KEY: (
                    counter.tenant_tag_key,
                    "The session tag naming a tenant's account",
                ),
            }
        for output_name, (value, description) in outputs.items():
            cdk.CfnOutput(self, output_name, value=value, description=description)

        self.counter = counter
