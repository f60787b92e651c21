"""The stack's EventBridge bus, as the publisher puts usage events on it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from functions.adapters.errors import translated
from functions.core.publishing import BusEvent
from functions.usage_events.models import SOURCE


class EventBridgeBus:
    def __init__(self, client: Any, bus_name: str) -> None:
        self._client = client
        self._bus_name = bus_name

    def put(self, events: Sequence[BusEvent]) -> list[bool]:
        """One PutEvents call. An entry the bus refused carries an ErrorCode and no EventId
        (EventBridge API reference, PutEvents: "PutEventsResultEntry")."""
        entries = [
            {"Source": SOURCE, "DetailType": event.detail_type, "Detail": event.detail, "EventBusName": self._bus_name}
            for event in events
        ]
        with translated("put events"):
            answer = self._client.put_events(Entries=entries)
        return ["EventId" in entry and "ErrorCode" not in entry for entry in answer.get("Entries", [])]
