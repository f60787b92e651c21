"""moto does not act on event source mappings: the local Lambda service is their only poller.

Upstream (`moto/dynamodb/models/table.py` and `moto/sqs/models.py`): a table or queue
with an event source mapping hands each new stream record or message to the mapped function itself,
which needs Docker; without it the invocation fails, and moto has meanwhile dropped the stream
records and received the messages, which raises their receive counts. On AWS the Lambda service's
pollers are the only readers, as the local Lambda service is here. The mappings stay listed by the
Lambda API; only the tables' and queues' private dispatch lists are emptied.
"""

from __future__ import annotations


def apply() -> None:
    from moto.dynamodb.models.table import Table
    from moto.sqs.models import Queue

    no_dispatch = property(lambda _: {}, lambda _self, _value: None)
    Table.lambda_event_source_mappings = no_dispatch  # type: ignore[assignment]
    Queue.lambda_event_source_mappings = no_dispatch  # type: ignore[assignment]
