"""Redrive: turns each DLQ 1 message (a failed stream range) back into applied counting work.

Each message is handled on its own; a message that cannot be completed is reported as failed, so
SQS redelivers it after the visibility timeout and moves it to DLQ 2 after maxReceiveCount.
"""

from __future__ import annotations

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from functions.adapters.failure_messages import parse_failure_message
from functions.core.redrive import redrive
from functions.shared.batch import batch_handler, log_outcomes
from functions.shared.observability import metrics, tracer
from functions.shared.wiring import Wiring

# Each message stands alone: report every failed one, even when all fail, rather than erroring the
# whole invocation, so SQS counts receives per message towards DLQ 2.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@tracer.capture_method
def redrive_message(record: SQSRecord, wiring: Wiring) -> str:
    batch = parse_failure_message(record.body)
    store = wiring.counting_store
    result = redrive(batch, reader=wiring.stream_reader, counting=store, pending=store)
    metrics.add_metric(name=f"Redriven{result.source.title()}", unit=MetricUnit.Count, value=1)
    log_outcomes(
        "range redriven",
        result.report,
        source=result.source,
        shard=batch.shard_id,
        start=batch.start_sequence_number,
        end=batch.end_sequence_number,
    )
    return result.source


handler = batch_handler(processor, redrive_message)
