"""The hybrid counter stack: data, dead letters, counting and API, wired together."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from infra import constants, settings
from infra.access import Access
from infra.api import Api
from infra.bundling import PipRunner, lambda_package, run_pip
from infra.counting import Counting
from infra.data import DataStore
from infra.dead_letters import DeadLetters
from infra.events import UsageEvents
from infra.jwt_authorizer import JwtAuthorizer
from infra.monitoring import Monitoring
from infra.nag import explain as explain_nag_findings
from infra.sweeper import Sweeper


class HybridCounterStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str = constants.DEFAULT_STACK_NAME,
        pip: PipRunner = run_pip,
        **kwargs: Any,
    ) -> None:
        """`pip` runs the bundler's pip install (tests give one that records it)."""
        super().__init__(scope, construct_id, **kwargs)
        if settings.skip_bundling(self):
            # Must happen before any child exists (CDK refuses context changes after that); assets
            # then point at the unbuilt source folder, which is fine for synth-only use.
            self.node.set_context(constants.CDK_BUNDLING_STACKS_CONTEXT_KEY, [])

        # Read once: the same architecture selects the wheels and is set on every function.
        package = lambda_package(settings.architecture(self), pip=pip)
        data = DataStore(self, constants.DATA_CONSTRUCT_ID)
        # Before counting: the consumer's on-failure destination is DLQ 1.
        dead_letters = DeadLetters(self, constants.DEAD_LETTERS_CONSTRUCT_ID, table=data.table, package=package)
        counting = Counting(
            self,
            constants.COUNTING_CONSTRUCT_ID,
            table=data.table,
            stream_failure_queue=dead_letters.stream_failure_queue,
            package=package,
        )
        jwt_authorizer = (
            JwtAuthorizer(
                self,
                constants.TOKEN_AUTHORIZER_CONSTRUCT_ID,
                package=package,
                table_name=data.table.table_name,
                jwt=settings.jwt_settings(self),
            )
            if settings.authorizer(self) == constants.AUTHORIZER_JWT
            else None
        )
        api = Api(
            self,
            constants.API_CONSTRUCT_ID,
            table=data.table,
            package=package,
            authorizer=jwt_authorizer.authorizer if jwt_authorizer else None,
        )
        # The roles callers assume for SigV4; with the JWT authorizer, tokens take their place.
        access = None if jwt_authorizer else Access(self, constants.ACCESS_CONSTRUCT_ID, rest_api=api.rest_api)
        sweeper = Sweeper(self, constants.SWEEPER_CONSTRUCT_ID, table=data.table, package=package)
        monitoring = Monitoring(
            self,
            constants.MONITORING_CONSTRUCT_ID,
            table=data.table,
            api=api,
            counting=counting,
            dead_letters=dead_letters,
            sweeper=sweeper,
        )
        usage_events = UsageEvents(
            self, constants.EVENTS_CONSTRUCT_ID, table=data.table, package=package, alarm_topic=monitoring.topic
        )

        stream_arn = data.table.table_stream_arn
        if stream_arn is None:  # the table is always created with a stream; this narrows the type
            raise AssertionError("the table has no stream")

        # Outputs live on the stack itself so their logical ids are exactly the constant names.
        outputs = {
            constants.OUTPUT_API_URL: (api.url, "Base URL of the HTTP API (stage included)"),
            constants.OUTPUT_TABLE_NAME: (data.table.table_name, "DynamoDB table"),
            constants.OUTPUT_STREAM_ARN: (stream_arn, "Stream read by the consumer, re-read by the redrive"),
            constants.OUTPUT_DLQ1_URL: (
                dead_letters.stream_failure_queue.queue_url,
                "DLQ 1: failed stream batches, drained by the redrive function",
            ),
            constants.OUTPUT_DLQ1_ARN: (dead_letters.stream_failure_queue.queue_arn, "DLQ 1 ARN"),
            constants.OUTPUT_DLQ2_URL: (
                dead_letters.final_queue.queue_url,
                "DLQ 2: batches the redrive could not apply; for operators",
            ),
            constants.OUTPUT_DLQ2_ARN: (dead_letters.final_queue.queue_arn, "DLQ 2 ARN"),
            constants.OUTPUT_SWEEPER_FUNCTION: (
                sweeper.function.function_name,
                "Scheduled sweeper (ops sweep runs it)",
            ),
            constants.OUTPUT_DLQ2_ALARM_NAME: (
                dead_letters.final_queue_alarm.alarm_name,
                "Alarm raised when DLQ 2 holds a message",
            ),
            constants.OUTPUT_ALARM_TOPIC_ARN: (
                monitoring.topic.topic_arn,
                "Every alarm publishes here; subscribe to it",
            ),
            constants.OUTPUT_DASHBOARD_NAME: (monitoring.dashboard.dashboard_name, "CloudWatch dashboard"),
            constants.OUTPUT_EVENT_BUS_NAME: (usage_events.bus.event_bus_name, "EventBridge bus of the usage events"),
            constants.OUTPUT_EVENT_BUS_ARN: (usage_events.bus.event_bus_arn, "Usage events bus ARN"),
            constants.OUTPUT_EVENTS_DLQ_URL: (
                usage_events.failure_queue.queue_url,
                "Usage events the publisher gave up on; ops events replay puts them again",
            ),
            constants.OUTPUT_EVENTS_DLQ_ALARM_NAME: (
                usage_events.failure_queue_alarm.alarm_name,
                "Alarm raised when the usage events' dead-letter queue holds a message",
            ),
            constants.OUTPUT_EVENTS_LOG_GROUP: (
                usage_events.log_group.log_group_name,
                "Every usage event put on the bus (ops events tails it)",
            ),
        }
        if access is not None:
            outputs |= {
                constants.OUTPUT_TENANT_ROLE_ARN: (
                    access.tenant_role.role_arn,
                    f"Assume with the session tag {constants.TENANT_TAG_KEY}=<account id> to call that account's paths",
                ),
                constants.OUTPUT_ADMIN_ROLE_ARN: (access.admin_role.role_arn, "Assume to call every path, set limits"),
                constants.OUTPUT_TENANT_TAG_KEY: (
                    constants.TENANT_TAG_KEY,
                    "The session tag naming a tenant's account",
                ),
            }
        for output_name, (value, description) in outputs.items():
            cdk.CfnOutput(self, output_name, value=value, description=description)

        self.data = data
        self.dead_letters = dead_letters
        self.counting = counting
        self.api = api
        self.access = access
        explain_nag_findings(self, api, access)
        self.monitoring = monitoring
        self.sweeper = sweeper
        self.usage_events = usage_events
