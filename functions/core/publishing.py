"""Delivering the usage events' outbox to the bus: at least once, a quota's events in their order.

The publisher reads each outbox item's insert from the table's stream (functions/adapters/outbox.py)
and puts its event on the bus, a PutEvents call per EVENTS_PER_PUT. A record whose event the bus did
not take is reported failed, and so is every record after it: Lambda retries a stream batch from its
lowest failed record, so nothing is put ahead of an event that has to wait. A retry may put an event
again: every copy carries its stable id (docs/events.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from functions.core.errors import StoreUnavailable

# PutEvents takes at most 10 entries a call (EventBridge API reference, PutEvents).
EVENTS_PER_PUT = 10


@dataclass(frozen=True)
class BusEvent:
    detail_type: str
    detail: str  # the event's JSON


class EventBus(Protocol):
    def put(self, events: Sequence[BusEvent]) -> list[bool]:
        """Put up to EVENTS_PER_PUT events in one call: whether the bus took each, in order."""
        ...


# A stream record's id (its sequence number) and the event its outbox item holds (None: the record
# is not an outbox item's insert, and there is nothing to put).
OutboxRecord = tuple[str, BusEvent | None]


@dataclass(frozen=True)
class PublishReport:
    published: tuple[BusEvent, ...]
    failed: tuple[str, ...]  # record ids to report for retry


def publish(bus: EventBus, records: Sequence[OutboxRecord]) -> PublishReport:
    """Put each record's event, in record order; stop at the first the bus does not take."""
    published: list[BusEvent] = []
    pending = [(record_id, event) for record_id, event in records if event is not None]
    for start in range(0, len(pending), EVENTS_PER_PUT):
        chunk = pending[start : start + EVENTS_PER_PUT]
        try:
            taken = bus.put([event for _, event in chunk])
        except StoreUnavailable:  # the call failed: none of the chunk is known to be on the bus
            taken = [False] * len(chunk)
        for offset, ((_, event), ok) in enumerate(zip(chunk, taken, strict=True)):
            if not ok:
                return PublishReport(tuple(published), tuple(rid for rid, _ in pending[start + offset :]))
            published.append(event)
    return PublishReport(tuple(published), ())
