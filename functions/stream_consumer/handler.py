"""Stream consumer: applies the eventual counter for a batch of resource records.

The event source filters to resource records with counting work, reports failures per item
(ReportBatchItemFailures), bisects on error and sends exhausted batches to DLQ 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.adapters.resource_records import sequence_number, stream_records
from functions.core.counting import ResourceRecord, process_records
from functions.core.leases import parse_timestamp
from functions.shared.batch import WholeBatchProcessor
from functions.shared.clients import Clients
from functions.shared.clients import default as default_clients
from functions.shared.observability import logger, metrics, tracer

processor = WholeBatchProcessor(
    event_type=EventType.DynamoDBStreams, record_type=DynamoDBRecord, item_id=sequence_number
)


def counting_lags_ms(creates_done: Sequence[ResourceRecord], now: datetime) -> list[float]:
    """Created -> counted, for each create a batch counted: the dashboard's counting lag (p95)."""
    return [
        max(0.0, (now - parse_timestamp(record.created_at)).total_seconds() * 1000)
        for record in creates_done
        if record.created_at
    ]


@tracer.capture_method
def apply_batch(records: Sequence[DynamoDBRecord], clients: Clients) -> list[str]:
    report = process_records(clients.counting_store, stream_records(records))
    for outcome, count in report.outcomes.items():
        metrics.add_metric(name=f"Records{outcome.name.title().replace('_', '')}", unit=MetricUnit.Count, value=count)
    for lag in counting_lags_ms(report.creates_done, datetime.now(UTC)):
        metrics.add_metric(name="CountingLag", unit=MetricUnit.Milliseconds, value=lag)
    logger.info(
        "batch applied", extra={"records": len(records), "outcomes": {k.value: v for k, v in report.outcomes.items()}}
    )
    return report.failed


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, clients: Clients | None = None
) -> PartialItemFailureResponse:
    record_handler = partial(apply_batch, clients=clients or default_clients())
    return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
