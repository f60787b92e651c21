"""`python -m ops events`: the usage events, as an operator sees them (docs/events.md).

`tail` reads the log group a rule of the stack sends every usage event to: the same read on AWS
and locally, where moto's EventBridge delivers to log groups too. `replay` puts again the events of
the stream batches the publisher gave up on (its dead-letter queue holds Lambda's on-failure
record of each, as DLQ 1 does the consumer's): the range's records are read back from the stream,
or, once the stream has trimmed them (24 h), the outbox items inserted in the range's time are
found in the table (they are kept 15 days). Putting an event twice is harmless: every copy has its
id, and subscribers deduplicate on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from aws_lambda_powertools.utilities.parser.models import DynamoDBStreamLambdaOnFailureDestinationModel

from functions.adapters import keys
from functions.adapters.attributes import from_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.event_bus import EventBridgeBus
from functions.adapters.failure_messages import InvalidFailureMessage, parse_failure_message
from functions.adapters.outbox import OUTBOX_RETENTION, inserted_events, outbox_event
from functions.adapters.streams import DynamoStreamReader
from functions.adapters.table_layout import EXPIRES_AT, SORT_KEY
from functions.core.publishing import OutboxRecord, publish
from functions.core.redrive import StreamRecordsGone
from functions.usage_events.models import LimitChanged, LimitRefused
from ops.commands import handle_each_message
from ops.stack import EXIT_ERROR, EXIT_OK

# A batch's records were written a little before they reached the stream.
ARRIVAL_SLACK = timedelta(minutes=1)


def tail(logs: Any, log_group: str, start_ms: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every event the log group holds from `start_ms` on, oldest first, with its time (ms)."""
    request: dict[str, Any] = {"logGroupName": log_group}
    if start_ms is not None:
        request["startTime"] = start_ms
    for page in logs.get_paginator("filter_log_events").paginate(**request):
        for entry in page.get("events", []):
            yield int(entry["timestamp"]), json.loads(entry["message"])


def describe(event: Mapping[str, Any]) -> str:
    """One line for a usage event: when, what, and its detail."""
    d = event.get("detail", {})
    quota = f"{d.get('accountId')}/{d.get('resourceType')}"
    if event.get("detail-type") == LimitChanged.DETAIL_TYPE:  # an admin's change, no seq
        old, new = d.get("oldThresholds"), d.get("newThresholds")
        thresholds = f", thresholds {_percentages(old)} -> {_percentages(new)}" if old != new else ""
        change = f"limit {d.get('oldLimit')} -> {d.get('newLimit')}{thresholds}"
        who = f"by {d.get('changedBy') or 'unknown'}, version {d.get('limitVersion')}"
        return f"{event.get('time')} {LimitChanged.DETAIL_TYPE} {quota}: {change} {who} id={d.get('eventId')}"
    if event.get("detail-type") == LimitRefused.DETAIL_TYPE:  # a minute's count, no seq
        minute = f"from {d.get('windowStart')} to {d.get('windowEnd')}"
        refused = f"{d.get('refused')} refused at limit {d.get('limit')} {minute}"
        return f"{event.get('time')} {LimitRefused.DETAIL_TYPE} {quota}: {refused} id={d.get('eventId')}"
    crossing = f"{d.get('direction')} {d.get('threshold')}% (usage {d.get('usage')} of {d.get('limit')})"
    return f"{event.get('time')} {event.get('detail-type')} {quota} #{d.get('seq')}: {crossing} id={d.get('eventId')}"


def _percentages(values: Any) -> str:
    if not isinstance(values, list):
        return str(values)
    return ",".join(map(str, values)) + "%" if values else "none"


@dataclass
class EventsReplay:
    replayed: dict[str, int] = field(default_factory=dict)  # message id -> events put
    failed: dict[str, str] = field(default_factory=dict)  # message id -> why; left in the queue
    from_table: list[str] = field(default_factory=list)  # message ids whose range the stream had trimmed

    @property
    def exit_code(self) -> int:
        return EXIT_ERROR if self.failed else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {"replayed": self.replayed, "failed": self.failed, "from_table": self.from_table}


def replay(sqs: Any, queue_url: str, streams: Any, table: DynamoTable, bus: EventBridgeBus) -> EventsReplay:
    """Put the events of every batch in the events' dead-letter queue on the bus again; a message
    is deleted once all of its events are on the bus, and left for another run otherwise."""
    report = EventsReplay()
    reader = DynamoStreamReader(streams)

    def put_again(message_id: str, body: str) -> bool:
        try:
            records = _records_of(body, reader, table)
        except (InvalidFailureMessage, StreamRecordsGone) as error:
            report.failed[message_id] = str(error)
            return False
        if records.from_table:
            report.from_table.append(message_id)
        outcome = publish(bus, records.events)
        if outcome.failed:
            report.failed[message_id] = f"{len(outcome.failed)} event(s) not taken by the bus"
            return False
        report.replayed[message_id] = len(outcome.published)
        return True

    handle_each_message(sqs, queue_url, put_again)
    return report


@dataclass(frozen=True)
class _BatchEvents:
    events: list[OutboxRecord]
    from_table: bool


def _records_of(body: str, reader: DynamoStreamReader, table: DynamoTable) -> _BatchEvents:
    batch = parse_failure_message(body)
    try:
        return _BatchEvents(inserted_events(reader.records(batch)), from_table=False)
    except StreamRecordsGone:
        info = DynamoDBStreamLambdaOnFailureDestinationModel.model_validate_json(body).ddb_stream_batch_info
        first, last = info.approximate_arrival_of_first_record, info.approximate_arrival_of_last_record
        if first is None or last is None:
            raise
        since, until = first - ARRIVAL_SLACK + OUTBOX_RETENTION, last + OUTBOX_RETENTION
        return _BatchEvents(list(_outbox_items(table, int(since.timestamp()), int(until.timestamp()))), from_table=True)


def _outbox_items(table: DynamoTable, expires_from: int, expires_to: int) -> Iterator[OutboxRecord]:
    """The outbox items whose TTL falls in the window (an item expires OUTBOX_RETENTION after it
    was written), in each quota's seq order: a Scan of the table, for an operator's rare replay."""
    request = {
        "TableName": table.name,
        "FilterExpression": "begins_with(#sk, :events) AND #expires BETWEEN :from AND :to",
        "ExpressionAttributeNames": {"#sk": SORT_KEY, "#expires": EXPIRES_AT},
        "ExpressionAttributeValues": {
            ":events": {"S": keys.EVENT_PREFIX},
            ":from": {"N": str(expires_from)},
            ":to": {"N": str(expires_to)},
        },
    }
    found: list[Mapping[str, Any]] = []
    for page in table.pages("scan outbox items", request, "scan"):
        found += page.get("Items", [])
    values = sorted((from_attributes(item) for item in found), key=lambda item: (item["pk"], item[SORT_KEY]))
    for item in values:
        yield f"{item['pk']} {item[SORT_KEY]}", outbox_event(item)
