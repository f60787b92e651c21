"""Event publisher: puts the usage events of the outbox items a stream batch inserted on the bus.

The event source filters to outbox items' inserts (functions/adapters/table_layout.py), reports
failures per item (ReportBatchItemFailures), bisects on error and sends exhausted batches to the
events' dead-letter queue, from which `python -m ops events replay` puts them again.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import EventType
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from functions.adapters.outbox import inserted_events
from functions.adapters.resource_records import sequence_number
from functions.core.publishing import publish
from functions.shared.batch import WholeBatchProcessor, batch_handler
from functions.shared.observability import logger, metrics, tracer
from functions.shared.wiring import Wiring

processor = WholeBatchProcessor(
    event_type=EventType.DynamoDBStreams, record_type=DynamoDBRecord, item_id=sequence_number
)


@tracer.capture_method
def publish_batch(records: Sequence[DynamoDBRecord], wiring: Wiring) -> list[str]:
    report = publish(wiring.event_bus, inserted_events(records))
    for event in report.published:  # each event once in the log: what `make run` prints
        logger.info("event published", extra={"detail_type": event.detail_type, "detail": event.detail})
    metrics.add_metric(name="EventsPublished", unit=MetricUnit.Count, value=len(report.published))
    if report.failed:
        metrics.add_metric(name="EventsNotPublished", unit=MetricUnit.Count, value=len(report.failed))
        logger.warning("events not published", extra={"records": len(report.failed)})
    return list(report.failed)


handler = batch_handler(processor, publish_batch)
