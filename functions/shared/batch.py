"""A Powertools batch processor that hands the whole batch to one function.

Powertools' BatchProcessor calls a handler per record. The counting core takes a batch (so work
can be grouped per account later) and says which records failed; this subclass keeps Powertools'
partial-response reporting (per-item failures, whole-batch error when every record fails) and
only changes how the handler is called, through Powertools' public API (`process`, the record data
classes, `success_handler` and `failure_handler`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor


class RecordFailed(Exception):
    """Reported for a record the batch handler could not apply; Lambda will retry it."""


# Takes the batch's records (Powertools data classes) and returns the ids of those that failed.
BatchHandler = Callable[[Sequence[Any]], Collection[str]]


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
