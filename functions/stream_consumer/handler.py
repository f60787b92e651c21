"""Stream consumer: applies the eventual counter for a batch of resource records.

The event source filters to resource records with counting work, reports failures per item
(ReportBatchItemFailures), bisects on error and sends exhausted batches to DLQ 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.core.counting import BatchReport, TaskKind, plan_stream_record, process_stream_records
from functions.shared.batch import WholeBatchProcessor
from functions.shared.clients import Clients
from functions.shared.clients import default as default_clients
from functions.shared.observability import logger, metrics, tracer


def sequence_number(record: DynamoDBRecord) -> str:
    return str(record.dynamodb.sequence_number if record.dynamodb else "")


processor = WholeBatchProcessor(
    event_type=EventType.DynamoDBStreams, record_type=DynamoDBRecord, item_id=sequence_number
)


def publish(report: BatchReport, prefix: str) -> None:
    for outcome, count in report.outcomes.items():
        metrics.add_metric(name=f"{prefix}{outcome.name.title().replace('_', '')}", unit=MetricUnit.Count, value=count)


def counting_lags_ms(records: Sequence[DynamoDBRecord], failed: Sequence[str], now: datetime) -> list[float]:
    """Created -> counted, for each create this batch counted: the dashboard's counting lag (p95)."""
    lags = []
    for record in records:
        raw = record.raw_event
        task = plan_stream_record(raw)
        if task is None or task.kind is not TaskKind.COUNT_CREATE or sequence_number(record) in failed:
            continue
        created = ((raw.get("dynamodb") or {}).get("NewImage") or {}).get("created_at", {}).get("S")
        if created:
            lags.append(max(0.0, (now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds() * 1000))
    return lags


@tracer.capture_method
def apply_batch(records: Sequence[DynamoDBRecord], clients: Clients) -> list[str]:
    report = process_stream_records(clients.counting_store, [record.raw_event for record in records])
    publish(report, "Records")
    for lag in counting_lags_ms(records, report.failed, clients.clock.now()):
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
