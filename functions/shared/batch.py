"""What the batch functions (the stream consumer and the redrive) share: their Lambda handler,
Powertools' partial batch response, and how they log a batch's outcomes.

Powertools' BatchProcessor calls a handler per record. The counting core takes a batch (so work
can be grouped per account) and says which records failed; `WholeBatchProcessor` keeps Powertools'
partial-response reporting (per-item failures, whole-batch error when every record fails) and
only changes how the handler is called, through Powertools' public API (`process`, the record data
classes, `success_handler` and `failure_handler`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from aws_lambda_powertools.utilities.batch import BasePartialBatchProcessor, BatchProcessor, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.core.counting import BatchReport
from functions.shared.observability import logger, metrics, tracer
from functions.shared.wiring import Wiring
from functions.shared.wiring import default as default_wiring


class RecordFailed(Exception):
    """Reported for a record the batch handler could not apply; Lambda will retry it."""


class WholeBatchProcessor(BatchProcessor):
    """`record_type` wraps each raw record (the Powertools data class of `event_type`, such as
    DynamoDBRecord); `item_id` names a record as the partial batch response reports it."""

    def __init__(
        self,
        *args: Any,
        record_type: Callable[[dict[str, Any]], Any],
        item_id: Callable[[Any], str],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._record_type = record_type
        self._item_id = item_id

    def process(self) -> list[tuple[Any, ...]]:
        records = [self._record_type(record) for record in self.records]
        failed = set(self.handler(records))
        results = []
        for record in records:
            item_id = self._item_id(record)
            if item_id in failed:
                error = RecordFailed(f"record {item_id} was not applied")
                results.append(self.failure_handler(record=record, exception=(RecordFailed, error, None)))
            else:
                results.append(self.success_handler(record=record, result=None))
        return results


def batch_handler(
    processor: BasePartialBatchProcessor, record_handler: Callable[..., Any]
) -> Callable[..., PartialItemFailureResponse]:
    """A batch function's Lambda handler: `processor` hands the event's records to
    `record_handler(records_or_record, wiring=...)` and answers Powertools' partial batch response.
    Lambda passes no wiring, so the one built at cold start serves; tests pass their own."""

    @logger.inject_lambda_context
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def handler(
        event: dict[str, Any], context: LambdaContext, wiring: Wiring | None = None
    ) -> PartialItemFailureResponse:
        handle = partial(record_handler, wiring=wiring or default_wiring())
        return process_partial_response(event=event, record_handler=handle, processor=processor, context=context)

    return handler


def log_outcomes(message: str, report: BatchReport, **extra: Any) -> None:
    """One log line for what a batch did: `extra`, and its outcomes by name. Its location is the
    caller's (Powertools' own frame is skipped by stacklevel 2, this one by 3)."""
    outcomes = {outcome.value: count for outcome, count in report.outcomes.items()}
    logger.info(message, extra={**extra, "outcomes": outcomes}, stacklevel=3)
