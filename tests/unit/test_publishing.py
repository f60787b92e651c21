"""Putting the outbox's events on the bus: in record order, stopping at the first the bus does not
take (functions/core/publishing.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from functions.core.errors import StoreUnavailable
from functions.core.publishing import EVENTS_PER_PUT, BusEvent, OutboxRecord, publish


def event(number: int) -> BusEvent:
    return BusEvent("Usage Threshold Crossed", f'{{"seq": {number}}}')


@dataclass
class ScriptedBus:
    """Takes every event but those listed; `down`: every call fails."""

    refuses: set[BusEvent] = field(default_factory=set)
    down: bool = False
    calls: list[list[BusEvent]] = field(default_factory=list)

    def put(self, events: Sequence[BusEvent]) -> list[bool]:
        self.calls.append(list(events))
        if self.down:
            raise StoreUnavailable("put events: InternalException", may_have_landed=True)
        return [item not in self.refuses for item in events]


def records(count: int) -> list[OutboxRecord]:
    return [(str(100 + number), event(number)) for number in range(count)]


def test_every_event_is_put_in_order_ten_a_call_and_other_records_are_skipped() -> None:
    bus = ScriptedBus()
    batch = [*records(23), ("999", None)]
    report = publish(bus, batch)
    assert [len(call) for call in bus.calls] == [EVENTS_PER_PUT, EVENTS_PER_PUT, 3]
    assert list(report.published) == [event(number) for number in range(23)]
    assert report.failed == ()


def test_an_event_the_bus_refused_fails_with_every_record_after_it() -> None:
    """Lambda retries the batch from the lowest failed record: nothing after it is put ahead of it."""
    bus = ScriptedBus(refuses={event(12)})
    report = publish(bus, records(25))
    assert list(report.published) == [event(number) for number in range(12)]
    assert report.failed == tuple(str(100 + number) for number in range(12, 25))
    assert len(bus.calls) == 2  # the third chunk is never put


def test_a_failed_call_fails_its_chunk_and_the_rest() -> None:
    report = publish(ScriptedBus(down=True), records(3))
    assert report.published == ()
    assert report.failed == ("100", "101", "102")
