"""The stream consumer that turns resource writes into exact (eventual) counter updates."""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from functions.adapters.table_layout import STREAM_FILTER_PATTERNS
from functions.shared.config import FunctionEnvironment
from infra import table_access
from infra.function_settings import STREAM_CONSUMER_FUNCTION
from infra.python_function import SharedSettings, python_function

# The stream event source of the consumer (and of the usage events' publisher, infra/usage_events.py).
STREAM_BATCH_SIZE: Final = 100
STREAM_MAX_RETRY_ATTEMPTS: Final = 5
STREAM_MAX_RECORD_AGE_SECONDS: Final = 3600
STREAM_BISECT_BATCH_ON_ERROR: Final = True


class Counting(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        stream_failure_queue: sqs.IQueue,
        shared: SharedSettings,
        batching_window_seconds: int,
        parallelization_factor: int,
    ) -> None:
        super().__init__(scope, construct_id)

        self.consumer_function = python_function(
            self,
            STREAM_CONSUMER_FUNCTION,
            shared=shared,
            environment=FunctionEnvironment(table_name=table.table_name),
        )
        self.consumer_function.add_event_source(
            event_sources.DynamoEventSource(
                table,
                # Every record must be counted, so start from the oldest one still in the stream.
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=STREAM_BATCH_SIZE,
                max_batching_window=cdk.Duration.seconds(batching_window_seconds),
                filters=[lambda_.FilterCriteria.filter(dict(pattern)) for pattern in STREAM_FILTER_PATTERNS],
                report_batch_item_failures=True,
                bisect_batch_on_error=STREAM_BISECT_BATCH_ON_ERROR,
                # Bounded, so a poison record cannot block its shard for the stream's 24 h retention;
                # exhausted batches go to DLQ 1 and the redrive.
                retry_attempts=STREAM_MAX_RETRY_ATTEMPTS,
                max_record_age=cdk.Duration.seconds(STREAM_MAX_RECORD_AGE_SECONDS),
                parallelization_factor=parallelization_factor,
                on_failure=event_sources.SqsDlq(stream_failure_queue),
            )
        )
        # The event source grants the stream read; the transactions need the table itself.
        table_access.grant_table(table, self.consumer_function, table_access.COUNTING)
