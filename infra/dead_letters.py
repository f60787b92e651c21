"""Where stream batches go when the consumer gives up, and the redrive that re-applies them.

DLQ 1 receives the on-failure metadata of the stream event source; the redrive function re-reads
that stream range and applies it. Messages the redrive cannot apply after a few receives land in
DLQ 2, which is final and alarmed for operators.
"""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from functions.shared.config import FunctionEnvironment
from infra import table_access
from infra.function_settings import REDRIVE_FUNCTION
from infra.python_function import SharedSettings, python_function

# Construct ids (stable: they feed the CloudFormation logical ids).
DLQ1_ID: Final = "StreamFailureQueue"
DLQ2_ID: Final = "RedriveFailureQueue"
DLQ2_ALARM_ID: Final = "RedriveFailureQueueNotEmpty"

DLQ_RETENTION_DAYS: Final = 14
DLQ1_MAX_RECEIVE_COUNT: Final = 5
# AWS recommends a queue visibility timeout of at least 6x the consuming function's timeout, so a
# message is not handed out again while an invocation (plus its throttling retries) may still run.
DLQ1_VISIBILITY_TIMEOUT_FACTOR: Final = 6
REDRIVE_BATCH_SIZE: Final = 10
DLQ2_ALARM_THRESHOLD: Final = 1
DLQ2_ALARM_PERIOD_MINUTES: Final = 1


def dead_letter_queue(
    scope: Construct,
    construct_id: str,
    *,
    removal_policy: cdk.RemovalPolicy,
    visibility_timeout: cdk.Duration | None = None,
    dead_letter_queue: sqs.DeadLetterQueue | None = None,
) -> sqs.Queue:
    return sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        # The maximum: operators get two weeks to look at a failure before it is gone.
        retention_period=cdk.Duration.days(DLQ_RETENTION_DAYS),
        visibility_timeout=visibility_timeout,
        dead_letter_queue=dead_letter_queue,
        removal_policy=removal_policy,
    )


def queue_not_empty_alarm(
    scope: Construct, construct_id: str, queue: sqs.IQueue, description: str, topic: sns.ITopic | None = None
) -> cloudwatch.Alarm:
    """An alarm raised by a dead-letter queue's first message (the most visible over a minute), and
    cleared when it is empty again; notifying `topic` of both, when given."""
    alarm = cloudwatch.Alarm(
        scope,
        construct_id,
        alarm_description=description,
        metric=queue.metric_approximate_number_of_messages_visible(
            period=cdk.Duration.minutes(DLQ2_ALARM_PERIOD_MINUTES),
            statistic=cloudwatch.Stats.MAXIMUM,
        ),
        threshold=DLQ2_ALARM_THRESHOLD,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        # SQS publishes no datapoints for an idle queue; silence is the healthy state.
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    if topic is not None:
        action = cloudwatch_actions.SnsAction(topic)
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)
    return alarm


class DeadLetters(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, table: dynamodb.ITable, shared: SharedSettings) -> None:
        super().__init__(scope, construct_id)

        self.final_queue = dead_letter_queue(self, DLQ2_ID, removal_policy=shared.removal_policy)
        self.stream_failure_queue = dead_letter_queue(
            self,
            DLQ1_ID,
            removal_policy=shared.removal_policy,
            visibility_timeout=cdk.Duration.seconds(DLQ1_VISIBILITY_TIMEOUT_FACTOR * REDRIVE_FUNCTION.timeout_seconds),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.final_queue, max_receive_count=DLQ1_MAX_RECEIVE_COUNT),
        )

        self.redrive_function = python_function(
            self,
            REDRIVE_FUNCTION,
            shared=shared,
            environment=FunctionEnvironment(table_name=table.table_name),
        )
        self.redrive_function.add_event_source(
            event_sources.SqsEventSource(
                self.stream_failure_queue,
                batch_size=REDRIVE_BATCH_SIZE,
                report_batch_item_failures=True,
            )
        )
        table_access.grant_table(table, self.redrive_function, table_access.COUNTING, table_access.REDRIVE_INDEXES)
        # The redrive re-reads the stream range named in the failure metadata: those two calls, on
        # this stream (CDK's grant_stream_read would add DescribeStream, and ListStreams on "*").
        table_access.grant_stream(table, self.redrive_function, table_access.STREAM_READS)

        self.final_queue_alarm = queue_not_empty_alarm(
            self,
            DLQ2_ALARM_ID,
            self.final_queue,
            "Stream records the redrive could not apply reached the final dead-letter queue: "
            "counters are not exact until an operator replays them",
        )
