"""Limit Refused events (docs/events.md): creates (and resizes that grow) refused with 409
LimitExceeded, counted per quota and minute with the units they asked for, announced once per
minute that had any.

The API does nothing for it but log one line per refusal (`refusal_log_fields`): CloudWatch Logs
sends the lines its subscription filter selects to the aggregator, which counts them per window
(`windows_of`), and the emitter announces each window once, after it has closed (`announce_delay`).
No call is added to the API's path.
"""

from __future__ import annotations

import enum
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from functions.core.errors import StoreUnavailable
from functions.core.model import Quota

# The refusal line's marker and fields, as the API logs them (Powertools puts `extra` keys at the
# top level of the JSON line) and the subscription filter selects them: `{ $.usage_event = "..." }`.
MARK_FIELD = "usage_event"
MARK_VALUE = "LimitRefused"
ACCOUNT_FIELD = "account_id"
TYPE_FIELD = "resource_type"
LIMIT_FIELD = "limit"
UNITS_FIELD = "units"  # what the refused request asked for; absent for 1 (every line before amounts)
# `true` on a shadow quota's line (admitted past its limit: the refusal enforcement would have
# made, docs/plans.md "Shadow mode"); absent for an enforced refusal (every line before shadow mode).
SHADOW_FIELD = "shadow"

WINDOW = timedelta(minutes=1)
# How long after its minute a window is announced: CloudWatch Logs delivers a subscription's lines
# seconds after they are written (more under load), and Lambda retries a failed asynchronous
# invocation after a minute ("How Lambda handles errors and retries with asynchronous invocation"),
# so 90 s lets the lines of a minute's last seconds arrive, and a batch whose first try failed
# arrive on its first retry. Lines later than that are counted in no event (docs/events.md). SQS
# delays a message by 900 s at most.
DEFAULT_GRACE = timedelta(seconds=90)
MAX_DELAY = timedelta(seconds=900)

_EVENT_ID_NAMESPACE = uuid.UUID("5d3e9a0c-7b41-4c2e-8f6a-1e9b0d2c4a77")


def refusal_log_fields(quota: Quota, limit: int, units: int = 1, shadow: bool = False) -> dict[str, Any]:
    """What the API's refusal line carries beside its message: the marker, the quota, its limit,
    the units asked for when not 1, and `shadow` for a shadow quota's (no tenant data: ids and
    numbers)."""
    quota_fields = {ACCOUNT_FIELD: quota.account_id, TYPE_FIELD: quota.resource_type}
    asked = {} if units == 1 else {UNITS_FIELD: units}
    marked = {SHADOW_FIELD: True} if shadow else {}
    return {MARK_FIELD: MARK_VALUE, **quota_fields, LIMIT_FIELD: limit, **asked, **marked}


def filter_pattern() -> str:
    """The subscription filter's pattern (CloudWatch Logs JSON filter syntax) selecting those lines."""
    return f'{{ $.{MARK_FIELD} = "{MARK_VALUE}" }}'


@dataclass(frozen=True)
class Refusal:
    """One refused create, as its log line tells it: `at` is the log event's time, `log_id` its id."""

    quota: Quota
    limit: int
    at: datetime
    log_id: str
    units: int = 1  # what it asked for
    shadow: bool = False  # a shadow quota's: admitted, the refusal is what enforcement would have made


def parse_refusal(message: str, at: datetime, log_id: str) -> Refusal | None:
    """The refusal a log line tells of; None for any other line (the filter may change under us)."""
    try:
        fields = json.loads(message)
    except ValueError:
        return None
    if not isinstance(fields, dict) or fields.get(MARK_FIELD) != MARK_VALUE:
        return None
    account, resource_type, limit = fields.get(ACCOUNT_FIELD), fields.get(TYPE_FIELD), fields.get(LIMIT_FIELD)
    units = fields.get(UNITS_FIELD, 1)
    if not isinstance(account, str) or not isinstance(resource_type, str) or not isinstance(limit, int):
        return None
    if not isinstance(units, int) or isinstance(units, bool) or units < 1:
        return None
    shadow = fields.get(SHADOW_FIELD, False)
    if not isinstance(shadow, bool):
        return None
    return Refusal(Quota(account, resource_type), limit, at, log_id, units, shadow)


@dataclass(frozen=True)
class Window:
    """A quota's refusals in one minute, [start, start + WINDOW): its enforced refusals, or (`shadow`)
    its shadow ones, each announced by an event of its own (docs/events.md)."""

    quota: Quota
    start: datetime
    shadow: bool = False

    @classmethod
    def of(cls, quota: Quota, at: datetime, shadow: bool = False) -> Window:
        moment = at.astimezone(UTC)
        return cls(quota, moment.replace(second=0, microsecond=0), shadow)

    @property
    def end(self) -> datetime:
        return self.start + WINDOW

    @property
    def name(self) -> str:
        """The minute as the keys name it: `2026-11-25T13:37Z` (sorts in time order)."""
        return self.start.strftime("%Y-%m-%dT%H:%MZ")

    @property
    def key_name(self) -> str:
        """The window as its items' keys name it: the minute, and `#shadow` for a shadow window."""
        return f"{self.name}#shadow" if self.shadow else self.name

    @property
    def event_id(self) -> str:
        """Stable: every copy of this window's event carries it, and no other window's does."""
        kind = "shadow-refused" if self.shadow else "refused"
        name = "\n".join((self.quota.account_id, self.quota.resource_type, kind, self.name))
        return str(uuid.uuid5(_EVENT_ID_NAMESPACE, name))


@dataclass(frozen=True)
class WindowCount:
    """What one batch adds to a window: `refused` refusals of `units` in all, the last one's `limit`,
    and the batch's id for this window (the same log events always give the same id, so a retried
    batch is known)."""

    window: Window
    refused: int
    limit: int
    batch_id: str
    units: int = 0  # 0: as many as `refused` (one each)

    @property
    def refused_units(self) -> int:
        return self.units or self.refused


def windows_of(refusals: Iterable[Refusal]) -> list[WindowCount]:
    """A batch's refusals grouped by quota and minute, in the order the windows first appear."""
    grouped: dict[Window, list[Refusal]] = {}
    for refusal in refusals:
        grouped.setdefault(Window.of(refusal.quota, refusal.at, refusal.shadow), []).append(refusal)
    counts = []
    for window, members in grouped.items():
        ids = "\n".join(sorted(member.log_id for member in members))
        batch_id = hashlib.sha256(ids.encode()).hexdigest()[:24]
        latest = max(members, key=lambda member: member.at)
        units = sum(member.units for member in members)
        counts.append(WindowCount(window, len(members), latest.limit, batch_id, units))
    return counts


def announce_delay(window: Window, now: datetime, grace: timedelta) -> timedelta:
    """How long to wait before announcing `window`: until its end, plus `grace` for its late lines
    (at most SQS's longest delay)."""
    return min(MAX_DELAY, max(timedelta(0), window.end - now) + grace)


def window_message(window: Window) -> str:
    """The emitter's message naming a window (`shadow` only on a shadow window's)."""
    fields: dict[str, Any] = {
        "accountId": window.quota.account_id,
        "resourceType": window.quota.resource_type,
        "start": window.name,
    }
    if window.shadow:
        fields["shadow"] = True
    return json.dumps(fields)


def parse_window_message(body: str) -> Window:
    fields: Mapping[str, Any] = json.loads(body)
    start = datetime.strptime(fields["start"], "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC)
    return Window(Quota(fields["accountId"], fields["resourceType"]), start, fields.get("shadow") is True)


class Counted(enum.Enum):
    """What a batch's update did to its window."""

    OPENED = "opened"  # the window's first refusals: its announcement is to be scheduled
    ADDED = "added"  # added to a window already open
    REPEATED = "repeated"  # this batch was counted before (a retried invocation): nothing added
    ANNOUNCED = "announced"  # this batch was counted before, and its window announced since
    LATE = "late"  # the window was announced already: counted in no event


@dataclass(frozen=True)
class WindowState:
    """A window as its item holds it."""

    refused: int
    limit: int
    announced: bool
    refused_units: int = 0  # 0: as many as `refused` (a window opened before amounts)

    @property
    def units(self) -> int:
        return self.refused_units or self.refused


class WindowStore(Protocol):
    def add(self, count: WindowCount, now: datetime) -> Counted:
        """Add `count` to its window, once per batch id and only while the window is not announced."""

    def read(self, window: Window) -> WindowState | None:
        """The window, strongly consistent; None if it has no item (never opened, or expired)."""

    def announce(self, window: Window, state: WindowState, now: datetime) -> bool:
        """Mark the window announced and write its event, in one transaction, on condition that
        its count is still `state`'s and it is not announced; False when that did not hold."""


class AnnouncementQueue(Protocol):
    def schedule(self, window: Window, delay: timedelta) -> None:
        """Have `window` announced after `delay`."""


@dataclass(frozen=True)
class AggregateReport:
    counted: int = 0  # refusals added to an open window
    late: int = 0  # refusals whose window was announced already
    repeated: int = 0  # refusals of batches counted before
    scheduled: int = 0  # announcements scheduled


def aggregate(
    refusals: Iterable[Refusal], store: WindowStore, queue: AnnouncementQueue, now: datetime, grace: timedelta
) -> AggregateReport:
    """Count a batch's refusals into their windows: one update per window. A window's first update
    schedules its announcement; a repeated batch schedules it again while it is open, since the try
    that opened it may have failed before scheduling (the emitter announces a window once)."""
    counted = late = repeated = scheduled = 0
    for count in windows_of(refusals):
        outcome = store.add(count, now)
        if outcome is Counted.LATE:
            late += count.refused
            continue
        if outcome in (Counted.REPEATED, Counted.ANNOUNCED):
            repeated += count.refused
        else:
            counted += count.refused
        if outcome in (Counted.OPENED, Counted.REPEATED):
            queue.schedule(count.window, announce_delay(count.window, now, grace))
            scheduled += 1
    return AggregateReport(counted, late, repeated, scheduled)


ANNOUNCE_ATTEMPTS = 5


def announce(window: Window, store: WindowStore, now: datetime) -> WindowState | None:
    """Announce `window` with the count it holds: the state announced, or None when there is
    nothing to announce (announced already: a redelivered message; or no item). A refusal counted
    between the read and the write makes the write fail, and the window is read again."""
    for _ in range(ANNOUNCE_ATTEMPTS):
        state = store.read(window)
        if state is None or state.announced:
            return None
        if store.announce(window, state, now):
            return state
    raise StoreUnavailable(f"refused window {window.quota} {window.name} kept changing", may_have_landed=False)
