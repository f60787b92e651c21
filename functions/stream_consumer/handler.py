"""Stream consumer: applies the eventual counter for a batch of resource records.

The event source filters to resource records with counting work, reports failures per item
(ReportBatchItemFailures), bisects on error and sends exhausted batches to DLQ 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import EventType
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from functions.adapters.resource_records import sequence_number, stream_records
from functions.core.counting import ResourceRecord, process_records
from functions.core.leases import parse_timestamp
from functions.shared.batch import WholeBatchProcessor, batch_handler, log_outcomes
from functions.shared.observability import metrics, tracer
from functions.shared.wiring import Wiring

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
def apply_batch(records: Sequence[DynamoDBRecord], wiring: Wiring) -> list[str]:
    report = process_records(wiring.counting_store, stream_records(records))
    for outcome, count in report.outcomes.items():
        metrics.add_metric(name=f"Records{outcome.name.title().replace('_', '')}", unit=MetricUnit.Count, value=count)
    for lag in counting_lags_ms(report.creates_done, wiring.clock.now()):
        metrics.add_metric(name="CountingLag", unit=MetricUnit.Milliseconds, value=lag)
    log_outcomes("batch applied", report, records=len(records))
    return report.failed


handler = batch_handler(processor, apply_batch)
