"""Refusal emitter: announces a refused window once its minute and grace are over, reading the
window's message from the queue the aggregator scheduled it on (functions/core/refusals.py).

The announcement is one transaction: the window marked announced and its Limit Refused event's
outbox item, which the publisher puts on the bus. A redelivered message finds the window announced
and writes nothing; a message that keeps failing goes to the refusals' dead-letter queue.
"""

from __future__ import annotations

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from functions.core.refusals import announce, parse_window_message
from functions.shared.batch import batch_handler
from functions.shared.observability import logger, metrics, tracer
from functions.shared.wiring import Wiring

# Each message stands alone: report every failed one, so SQS counts receives per message.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@tracer.capture_method
def announce_message(record: SQSRecord, wiring: Wiring) -> None:
    window = parse_window_message(record.body)
    state = announce(window, wiring.refused_windows, wiring.clock.now())
    if state is None:
        logger.info("refused window announced already", extra={"quota": str(window.quota), "window": window.key_name})
        return
    metrics.add_metric(name="LimitRefusedAnnounced", unit=MetricUnit.Count, value=1)
    logger.info(
        "refused window announced",
        extra={"quota": str(window.quota), "window": window.key_name, "refused": state.refused},
    )


handler = batch_handler(processor, announce_message)
