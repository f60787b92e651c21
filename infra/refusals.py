"""Limit Refused events (docs/events.md, functions/core/refusals.py): built from the API function's
logs, so a refused create makes no call it did not make before.

A subscription filter on the API function's log group sends its refusal lines to the aggregator
(CloudWatch Logs invokes it asynchronously: Lambda retries a failed invocation twice, then puts the
event on the refusals' dead-letter queue). The aggregator counts them per quota and minute and, when
a minute's window opens, sends a message to the windows queue, delayed until the minute is over
and its late lines are in; the emitter reads it and announces the window (its outbox item, which
the publisher puts on the bus). A message the emitter keeps failing goes to the same dead-letter
queue, whose first message raises an alarm.
"""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_logs_destinations as log_destinations
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from functions.core.refusals import filter_pattern
from functions.shared.config import FunctionEnvironment
from infra import table_access
from infra.dead_letters import dead_letter_queue, queue_not_empty_alarm
from infra.function_settings import REFUSAL_AGGREGATOR_FUNCTION, REFUSAL_EMITTER_FUNCTION
from infra.python_function import SharedSettings, python_function

# Construct ids (stable: they feed the CloudFormation logical ids): the subscription filter on the
# API's log group, the queue of windows to announce, and the dead-letter queue of both functions.
REFUSAL_FILTER_ID: Final = "RefusalLines"
REFUSED_WINDOWS_QUEUE_ID: Final = "RefusedWindowsQueue"
REFUSALS_DLQ_ID: Final = "RefusalsFailureQueue"
REFUSALS_DLQ_ALARM_ID: Final = "RefusalsFailureQueueNotEmpty"

REFUSED_WINDOWS_MAX_RECEIVE_COUNT: Final = 5
REFUSAL_EMITTER_BATCH_SIZE: Final = 10

DLQ_FINDING = (
    "The queue is the dead-letter queue of the refusal aggregator's asynchronous invocations and of the windows "
    "queue; an operator reads it (docs/operations.md), no function consumes it."
)


class LimitRefusals(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        shared: SharedSettings,
        api_function: lambda_.Function,
        alarm_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        self.failure_queue = dead_letter_queue(self, REFUSALS_DLQ_ID, removal_policy=shared.removal_policy)
        emitter_timeout = REFUSAL_EMITTER_FUNCTION.timeout_seconds
        self.windows_queue = sqs.Queue(
            self,
            REFUSED_WINDOWS_QUEUE_ID,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # Six times the emitter's timeout, as Lambda advises for an SQS event source.
            visibility_timeout=cdk.Duration.seconds(6 * emitter_timeout),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.failure_queue, max_receive_count=REFUSED_WINDOWS_MAX_RECEIVE_COUNT
            ),
            removal_policy=shared.removal_policy,
        )

        self.aggregator = python_function(
            self,
            REFUSAL_AGGREGATOR_FUNCTION,
            shared=shared,
            environment=FunctionEnvironment(
                table_name=table.table_name, refusal_queue_url=self.windows_queue.queue_url
            ),
            dead_letter_queue=self.failure_queue,
        )
        table_access.grant_table(table, self.aggregator, table_access.REFUSAL_AGGREGATOR)
        self.windows_queue.grant_send_messages(self.aggregator)

        self.emitter = python_function(
            self,
            REFUSAL_EMITTER_FUNCTION,
            shared=shared,
            environment=FunctionEnvironment(table_name=table.table_name),
        )
        table_access.grant_table(table, self.emitter, table_access.REFUSAL_EMITTER)
        self.emitter.add_event_source(
            event_sources.SqsEventSource(
                self.windows_queue,
                batch_size=REFUSAL_EMITTER_BATCH_SIZE,
                report_batch_item_failures=True,
            )
        )

        # The API's refusal lines, and no other (CloudWatch Logs user guide, "Log group-level
        # subscription filters"); the destination adds the permission for logs.amazonaws.com.
        if api_function.log_group is None:
            raise AssertionError("the API function has no log group of its own")
        logs.SubscriptionFilter(
            self,
            REFUSAL_FILTER_ID,
            log_group=api_function.log_group,
            destination=log_destinations.LambdaDestination(self.aggregator),
            filter_pattern=logs.FilterPattern.literal(filter_pattern()),
        )

        self.failure_queue_alarm = queue_not_empty_alarm(
            self,
            REFUSALS_DLQ_ALARM_ID,
            self.failure_queue,
            "Refused creates the aggregator could not count, or minutes the emitter could not announce, reached "
            "their dead-letter queue: some Limit Refused events are missing (docs/operations.md)",
            alarm_topic,
        )
        cdk.Validations.of(self.failure_queue).acknowledge(
            cdk.Acknowledgment(id="AwsSolutions-SQS3", reason=DLQ_FINDING)
        )
