"""The plan rollout (functions/core/rollout.py, docs/plans.md): its two functions.

`pager`: the table's stream, filtered to the plan items' inserts and changes
(table_layout.PLAN_FILTER_PATTERNS), each record a plan's version: it pages the plan's accounts in
the registry and queues those behind the version, and a message to page on. `worker`: the rollout
queue (an SQS event source, partial batch failures through Powertools' batch utility): a page
message pages on, an apply message gives its accounts the version. A record or message that fails
is retried; its retry skips what landed (the core's idempotence), and one that keeps failing goes
to the rollout's dead-letter queue (alarmed).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from functions.adapters import plan_item
from functions.adapters.resource_records import sequence_number
from functions.core import leases, rollout
from functions.shared.batch import WholeBatchProcessor, batch_handler
from functions.shared.observability import logger, metrics, tracer
from functions.shared.wiring import Wiring

stream_processor = WholeBatchProcessor(
    event_type=EventType.DynamoDBStreams, record_type=DynamoDBRecord, item_id=sequence_number
)
# Each message stands alone: report every failed one, so SQS counts receives per message.
queue_processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def plan_version_of(record: DynamoDBRecord) -> rollout.Page | None:
    """The first page of the version a plan item's record wrote; None for any other record."""
    data = record.dynamodb
    image = data.new_image if data else None
    if not image or plan_item.NAME not in image or plan_item.VERSION not in image:
        return None
    return rollout.Page(str(image[plan_item.NAME]), int(image[plan_item.VERSION]))


@tracer.capture_method
def page_versions(records: Sequence[DynamoDBRecord], wiring: Wiring) -> list[str]:
    failed = []
    for record in records:
        first = plan_version_of(record)
        if first is None:
            continue
        try:
            queued = rollout.page(wiring.api_store, wiring.rollout_queue, first)
        except Exception:
            logger.exception("plan rollout not paged", extra={"plan": first.plan, "version": first.version})
            failed.append(sequence_number(record))
            continue
        logger.info("plan rollout paged", extra={"plan": first.plan, "version": first.version, "queued": queued})
        metrics.add_metric(name="RolloutAccountsQueued", unit=MetricUnit.Count, value=queued)
    return failed


@tracer.capture_method
def handle_message(record: SQSRecord, wiring: Wiring) -> None:
    message = rollout.parse_message(record.body)
    if isinstance(message, rollout.Page):
        queued = rollout.page(wiring.api_store, wiring.rollout_queue, message)
        metrics.add_metric(name="RolloutAccountsQueued", unit=MetricUnit.Count, value=queued)
        return
    changed = rollout.apply(wiring.api_store, message, lambda: leases.iso_timestamp(wiring.clock.now()), lambda: True)
    metrics.add_metric(name="RolloutAccountsUpdated", unit=MetricUnit.Count, value=changed)
    logger.info(
        "plan rollout applied",
        extra={"plan": message.plan, "version": message.version, "accounts": len(message.accounts), "changed": changed},
    )


pager = batch_handler(stream_processor, page_versions)
worker = batch_handler(queue_processor, handle_message)
