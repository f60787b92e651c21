"""Usage events (docs/events.md): the bus, and the publisher that puts the outbox's events on it.

The consumer writes one outbox item per usage threshold crossed, in its own transaction
(functions/core/thresholds.py). The publisher reads their inserts from the table's stream through
its own event source mapping, filtered to them, with partial batch responses, bisection, bounded
retries and the events' dead-letter queue (alarmed; `python -m ops events replay` puts its batches
again). A rule of the bus keeps every event in a log group, which `python -m ops events` tails.
"""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
import jsii
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from functions.adapters.table_layout import OUTBOX_FILTER_PATTERNS
from functions.shared.config import FunctionEnvironment
from functions.usage_events.models import SOURCE, UsageThresholdCrossed
from infra.counting import STREAM_BATCH_SIZE, STREAM_MAX_RECORD_AGE_SECONDS, STREAM_MAX_RETRY_ATTEMPTS
from infra.dead_letters import dead_letter_queue, queue_not_empty_alarm
from infra.function_settings import EVENT_PUBLISHER_FUNCTION
from infra.props import UsageWebhook
from infra.python_function import SharedSettings, python_function

# Construct ids (stable: they feed the CloudFormation logical ids): the bus, the dead-letter queue of
# the batches the publisher gave up on, the log group the bus's events are kept in for
# `python -m ops events`, and its rule, the webhook's and the alarm topic's (with `-c alarmEmail`:
# threshold crossings go there as well).
EVENT_BUS_ID: Final = "UsageEventBus"
EVENTS_DLQ_ID: Final = "EventsFailureQueue"
EVENTS_DLQ_ALARM_ID: Final = "EventsFailureQueueNotEmpty"
EVENTS_LOG_ID: Final = "UsageEventsLog"
EVENTS_LOG_RULE_ID: Final = "UsageEventsToLog"
USAGE_WEBHOOK_ID: Final = "UsageWebhook"
EVENTS_TO_ALARM_TOPIC_RULE_ID: Final = "UsageThresholdsToAlarmTopic"

# Every event the stack puts: what the stack's own rules match.
USAGE_EVENTS = events.EventPattern(source=[SOURCE])
THRESHOLD_CROSSINGS = events.EventPattern(source=[SOURCE], detail_type=[UsageThresholdCrossed.DETAIL_TYPE])
# The events' dead-letter queue is the publisher's on-failure destination, which cdk-nag's SQS3
# does not see (infra/nag.py keeps the stack's other findings).
DLQ_FINDING = (
    "The queue is the dead-letter destination of the event publisher's stream event source (its on-failure "
    "destination); its messages are replayed by an operator (ops events replay), never consumed by a function."
)


@jsii.implements(events.IRuleTarget)
class LogGroupTarget:
    """A rule's target writing to a log group, whose resource policy the construct declares itself
    (CDK's CloudWatchLogGroup target would add a custom resource, a function of its own, to set it)."""

    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._log_group = log_group

    def bind(self, rule: events.IRule, id: str | None = None) -> events.RuleTargetConfig:
        # The log group's own ARN, without the `:*` its Arn attribute ends with (EventBridge user
        # guide, "Amazon CloudWatch Logs" targets).
        arn = cdk.Stack.of(self._log_group).format_arn(
            service="logs",
            resource="log-group",
            resource_name=self._log_group.log_group_name,
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        return events.RuleTargetConfig(arn=arn)


class UsageEvents(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        shared: SharedSettings,
        alarm_topic: sns.ITopic,
        event_bus: events.IEventBus | None,
        thresholds_to_alarm_topic: bool,
        webhook: UsageWebhook | None,
        name_prefix: str,
    ) -> None:
        """`event_bus`: a bus of the deployer's to put the events on (None: the construct makes one).
        `thresholds_to_alarm_topic`: threshold crossings go to the alarm topic too (an alarm email
        is subscribed to it). `webhook`: an endpoint every usage event is POSTed to.
        `name_prefix`: unique to the counter, for the log group's fixed name."""
        super().__init__(scope, construct_id)
        self.bus = event_bus or events.EventBus(self, EVENT_BUS_ID)

        self.failure_queue = dead_letter_queue(self, EVENTS_DLQ_ID, removal_policy=shared.removal_policy)
        self.publisher_function = python_function(
            self,
            EVENT_PUBLISHER_FUNCTION,
            shared=shared,
            environment=FunctionEnvironment(table_name=table.table_name, event_bus_name=self.bus.event_bus_name),
        )
        self.publisher_function.add_event_source(
            event_sources.DynamoEventSource(
                table,
                # Every outbox item still in the stream is an event to put.
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=STREAM_BATCH_SIZE,
                filters=[lambda_.FilterCriteria.filter(dict(pattern)) for pattern in OUTBOX_FILTER_PATTERNS],
                report_batch_item_failures=True,
                bisect_batch_on_error=True,
                retry_attempts=STREAM_MAX_RETRY_ATTEMPTS,
                max_record_age=cdk.Duration.seconds(STREAM_MAX_RECORD_AGE_SECONDS),
                on_failure=event_sources.SqsDlq(self.failure_queue),
            )
        )
        self.bus.grant_put_events_to(self.publisher_function)

        self.failure_queue_alarm = queue_not_empty_alarm(
            self,
            EVENTS_DLQ_ALARM_ID,
            self.failure_queue,
            "Usage events the publisher could not put on the bus reached their dead-letter queue: "
            "subscribers miss them until an operator runs `python -m ops events replay`",
            alarm_topic,
        )

        # EventBridge writes to log groups named /aws/events/... (EventBridge user guide, "Amazon
        # CloudWatch Logs" targets); the counter's name prefix keeps two counters of a region apart.
        self.log_group = logs.LogGroup(
            self,
            EVENTS_LOG_ID,
            log_group_name=f"/aws/events/{name_prefix}-usage",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=shared.removal_policy,
        )
        # EventBridge writes to a log group that a resource policy lets it write to (EventBridge
        # user guide, "CloudWatch Logs permissions").
        logs.ResourcePolicy(
            self,
            "UsageEventsLogPolicy",
            policy_statements=[
                iam.PolicyStatement(
                    principals=[
                        iam.ServicePrincipal("events.amazonaws.com"),
                        iam.ServicePrincipal("delivery.logs.amazonaws.com"),
                    ],
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[self.log_group.log_group_arn],
                )
            ],
        )
        events.Rule(
            self,
            EVENTS_LOG_RULE_ID,
            event_bus=self.bus,
            event_pattern=USAGE_EVENTS,
            targets=[LogGroupTarget(self.log_group)],
        )
        if thresholds_to_alarm_topic:
            events.Rule(
                self,
                EVENTS_TO_ALARM_TOPIC_RULE_ID,
                event_bus=self.bus,
                event_pattern=THRESHOLD_CROSSINGS,
                targets=[targets.SnsTopic(alarm_topic)],
            )
        if webhook is not None:
            self._webhook(webhook)
        cdk.Validations.of(self.failure_queue).acknowledge(
            cdk.Acknowledgment(id="AwsSolutions-SQS3", reason=DLQ_FINDING)
        )

    def _webhook(self, webhook: UsageWebhook) -> None:
        """An API destination POSTing each usage event to the webhook (every type: a receiver tells
        them apart by `detail-type`), its connection's API key a dynamic reference to the secret
        (CloudFormation resolves it at deploy time; the template holds only the ARN). EventBridge
        retries a failed call for 24 hours (its default retry policy) and sends the event as the
        request's JSON body."""
        connection = events.Connection(
            self,
            f"{USAGE_WEBHOOK_ID}Connection",
            authorization=events.Authorization.api_key(
                webhook.header, cdk.SecretValue.secrets_manager(webhook.secret_arn)
            ),
            description="The usage webhook's API key, from Secrets Manager",
        )
        destination = events.ApiDestination(
            self,
            USAGE_WEBHOOK_ID,
            connection=connection,
            endpoint=webhook.url,
            http_method=events.HttpMethod.POST,
            description="Usage events (docs/events.md)",
        )
        events.Rule(
            self,
            f"{USAGE_WEBHOOK_ID}Rule",
            event_bus=self.bus,
            event_pattern=USAGE_EVENTS,
            targets=[targets.ApiDestination(destination)],
        )
