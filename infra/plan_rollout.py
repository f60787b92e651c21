"""A plan change reaching every account on it (docs/plans.md, functions/core/rollout.py).

The pager reads the table's stream through its own event source mapping, filtered to the plan
items (table_layout.PLAN_FILTER_PATTERNS), and queues the plan's accounts behind the new version
on the rollout queue; the worker (an SQS event source, partial batch responses) gives them the
version and pages on. A message the worker keeps failing goes to the rollout's dead-letter queue,
and a stream batch the pager keeps failing too (its on-failure destination); the queue's first
message raises an alarm. The worker's concurrency is capped, so a rollout's writes stay a bounded
share of the table's.
"""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from functions.adapters.table_layout import PLAN_FILTER_PATTERNS
from functions.shared.config import FunctionEnvironment
from infra import table_access
from infra.counting import STREAM_MAX_RECORD_AGE_SECONDS, STREAM_MAX_RETRY_ATTEMPTS
from infra.dead_letters import dead_letter_queue, queue_not_empty_alarm
from infra.function_settings import PLAN_PAGER_FUNCTION, PLAN_WORKER_FUNCTION
from infra.python_function import SharedSettings, python_function

# Construct ids (stable: they feed the CloudFormation logical ids).
ROLLOUT_QUEUE_ID: Final = "RolloutQueue"
ROLLOUT_DLQ_ID: Final = "RolloutFailureQueue"
ROLLOUT_DLQ_ALARM_ID: Final = "RolloutFailureQueueNotEmpty"

ROLLOUT_MAX_RECEIVE_COUNT: Final = 5
ROLLOUT_WORKER_BATCH_SIZE: Final = 1  # a message holds up to 10 accounts: one retried alone
# The worker's most concurrent invocations (an SQS event source's maximum concurrency): the
# rollout's pace (docs/plans.md, its projection for 100,000 accounts).
ROLLOUT_WORKER_CONCURRENCY: Final = 25
PLAN_STREAM_BATCH_SIZE: Final = 10

DLQ_FINDING = (
    "The queue is the dead-letter queue of the rollout queue and the pager's on-failure destination; an operator "
    "reads it (docs/operations.md), no function consumes it."
)


class PlanRollout(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        shared: SharedSettings,
        alarm_topic: sns.ITopic,
    ) -> None:
        super().__init__(scope, construct_id)
        self.failure_queue = dead_letter_queue(self, ROLLOUT_DLQ_ID, removal_policy=shared.removal_policy)
        self.queue = sqs.Queue(
            self,
            ROLLOUT_QUEUE_ID,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # Six times the worker's timeout, as Lambda advises for an SQS event source.
            visibility_timeout=cdk.Duration.seconds(6 * PLAN_WORKER_FUNCTION.timeout_seconds),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.failure_queue, max_receive_count=ROLLOUT_MAX_RECEIVE_COUNT
            ),
            removal_policy=shared.removal_policy,
        )
        environment = FunctionEnvironment(table_name=table.table_name, rollout_queue_url=self.queue.queue_url)

        self.pager = python_function(self, PLAN_PAGER_FUNCTION, shared=shared, environment=environment)
        table_access.grant_table(table, self.pager, table_access.ROLLOUT_PAGER, table_access.API_INDEXES)
        self.queue.grant_send_messages(self.pager)
        self.pager.add_event_source(
            event_sources.DynamoEventSource(
                table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=PLAN_STREAM_BATCH_SIZE,
                filters=[lambda_.FilterCriteria.filter(dict(pattern)) for pattern in PLAN_FILTER_PATTERNS],
                report_batch_item_failures=True,
                bisect_batch_on_error=True,
                retry_attempts=STREAM_MAX_RETRY_ATTEMPTS,
                max_record_age=cdk.Duration.seconds(STREAM_MAX_RECORD_AGE_SECONDS),
                on_failure=event_sources.SqsDlq(self.failure_queue),
            )
        )

        self.worker = python_function(self, PLAN_WORKER_FUNCTION, shared=shared, environment=environment)
        table_access.grant_table(table, self.worker, table_access.ROLLOUT_WORKER, table_access.API_INDEXES)
        self.queue.grant_send_messages(self.worker)
        self.worker.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                batch_size=ROLLOUT_WORKER_BATCH_SIZE,
                report_batch_item_failures=True,
                max_concurrency=ROLLOUT_WORKER_CONCURRENCY,
            )
        )

        self.failure_queue_alarm = queue_not_empty_alarm(
            self,
            ROLLOUT_DLQ_ALARM_ID,
            self.failure_queue,
            "A plan change's rollout gave up on a message or a stream batch: some accounts keep an older version of "
            "their plan until it is changed again or they are put on it again (docs/plans.md)",
            alarm_topic,
        )
        cdk.Validations.of(self.failure_queue).acknowledge(
            cdk.Acknowledgment(id="AwsSolutions-SQS3", reason=DLQ_FINDING)
        )
