"""The calendar of periodic quotas: which window of a day or month period an instant falls in.

A periodic quota counts what was created since its current period began. A period is a kind (a
day or a month) and an optional anchor:

- a **day** is 24 hours starting at the anchor's time of day (00:00:00 UTC without an anchor).
  Every day of UTC is 86,400 seconds: UTC has no daylight saving time, and leap seconds are not
  represented by `datetime`.
- a **month** starts on the anchor's day of the month at the anchor's time of day; a month without
  that day starts it on its last day (anchored on the 31st: Jan 31, Feb 28 or 29, Mar 31, Apr 30
  ...), so a month window is 28 to 31 days. Without an anchor, the 1st at 00:00 UTC.

The anchor is itself a window's start; windows extend before and after it. Windows are half-open
(`start <= instant < end`), each ending where the next starts, so every instant is in exactly one:
an instant at a boundary belongs to the window it starts.

A window's id (its start as `20261127T000000Z`) is what DynamoDB keys hold: fixed width, so ids
sort in time order.

Pure: standard library only, and no clock of its own; every instant is passed in, and must be
aware (a naive datetime names no instant: ValueError). Instants are compared in UTC whatever their
zone.
"""

from __future__ import annotations

import calendar
import enum
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

# Anchors stay within these years, so that window ids, keys and TTLs derived from them stay sane.
MIN_ANCHOR_YEAR = 2000
MAX_ANCHOR_YEAR = 2999

DAY = timedelta(days=1)
# What a day period without an anchor counts from: any UTC midnight would do.
_MIDNIGHT = datetime(MIN_ANCHOR_YEAR, 1, 1, tzinfo=UTC)

_WINDOW_ID = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})T([0-9]{2})([0-9]{2})([0-9]{2})Z")
# RFC 3339's date-time (section 5.6; "T" and "Z" may be lower case), fractional seconds matched
# only to be refused with their own message.
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
# How much of a refused value an error message repeats.
_SHOWN = 40
_ANCHOR_RANGE = f"anchor must be from {MIN_ANCHOR_YEAR}-01-01T00:00:00Z to {MAX_ANCHOR_YEAR}-12-31T23:59:59Z"


class PeriodKind(enum.StrEnum):
    DAY = "day"
    MONTH = "month"


def format_instant(instant: datetime) -> str:
    """The instant in UTC as RFC 3339 to the second (`2026-11-27T00:00:00Z`); a fraction of a
    second is dropped."""
    return _utc(instant, "instant").strftime("%Y-%m-%dT%H:%M:%SZ")


def start_of(window_id: str) -> str:
    """When the window whose id is `window_id` starts, as format_instant writes it (the id is its
    start); ValueError if it is not an id."""
    match = _WINDOW_ID.fullmatch(window_id)
    if match is None:
        raise ValueError(f"not a window id (YYYYMMDDTHHMMSSZ): {window_id!r:.{_SHOWN}}")
    year, month, day, hour, minute, second = (int(part) for part in match.groups())
    return format_instant(datetime(year, month, day, hour, minute, second, tzinfo=UTC))


@dataclass(frozen=True)
class PeriodWindow:
    """One window of a period: from `start` (included) to `end` (excluded), both UTC, whole
    seconds. `end` is the next window's start."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        for name, value in (("start", self.start), ("end", self.end)):
            if value.tzinfo is None or value.utcoffset() != timedelta(0) or value.microsecond:
                raise ValueError(f"a window's {name} is a UTC instant in whole seconds")
        if self.start >= self.end:
            raise ValueError("a window ends after it starts")

    @property
    def id(self) -> str:
        """The start as `20261127T000000Z`: what keys hold; ids sort in time order."""
        start = self.start
        return f"{start.year:04d}{start.month:02d}{start.day:02d}T{start.hour:02d}{start.minute:02d}{start.second:02d}Z"

    def contains(self, instant: datetime) -> bool:
        return self.start <= _utc(instant, "instant") < self.end


@dataclass(frozen=True)
class Period:
    """A day or month period, on UTC calendar boundaries (no anchor) or from an anchor: an aware
    instant in whole seconds, years 2000 to 2999, held in UTC."""

    kind: PeriodKind
    anchor: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", PeriodKind(self.kind))
        if self.anchor is not None:
            anchor = _utc(self.anchor, "anchor")
            if anchor.microsecond:
                raise ValueError("anchor must be a whole second (no fractional seconds)")
            if not MIN_ANCHOR_YEAR <= anchor.year <= MAX_ANCHOR_YEAR:
                raise ValueError(_ANCHOR_RANGE)
            object.__setattr__(self, "anchor", anchor)

    def window_at(self, instant: datetime) -> PeriodWindow:
        """The one window holding `instant` (aware, any zone)."""
        instant = _utc(instant, "instant")
        try:
            if self.kind is PeriodKind.DAY:
                origin = self.anchor or _MIDNIGHT
                start = origin + (instant - origin) // DAY * DAY
                return PeriodWindow(start, start + DAY)
            year, month = instant.year, instant.month
            start = self._month_start(year, month)
            if instant < start:
                year, month = _month_before(year, month)
                start = self._month_start(year, month)
            return PeriodWindow(start, self._month_start(*_month_after(year, month)))
        except (OverflowError, ValueError) as error:  # within a month of datetime's year 1 or 9999
            raise ValueError("instant out of range") from error

    def window_with_id(self, window_id: str) -> PeriodWindow:
        """The window whose `id` is `window_id`; ValueError if it is not a window start of this
        period (or not an id)."""
        match = _WINDOW_ID.fullmatch(window_id) if isinstance(window_id, str) else None
        if match is None:
            raise ValueError(f"not a window id (YYYYMMDDTHHMMSSZ): {window_id!r:.{_SHOWN}}")
        year, month, day, hour, minute, second = (int(part) for part in match.groups())
        try:
            start = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError as error:
            raise ValueError(f"not a window id (no such time): {window_id!r}") from error
        window = self.window_at(start)
        if window.start != start:
            raise ValueError(f"{window_id!r} is not the start of a window of this period")
        return window

    def following(self, window: PeriodWindow) -> PeriodWindow:
        return self.window_at(self._own(window).end)

    def preceding(self, window: PeriodWindow) -> PeriodWindow:
        return self.window_at(self._own(window).start - timedelta(microseconds=1))

    def last(self, instant: datetime, count: int) -> list[PeriodWindow]:
        """The window at `instant` and the `count - 1` before it, newest first."""
        if count < 0:
            raise ValueError("count must be 0 or more")
        windows: list[PeriodWindow] = []
        if count:
            windows.append(self.window_at(instant))
        while len(windows) < count:
            windows.append(self.preceding(windows[-1]))
        return windows

    def to_json(self) -> dict[str, str]:
        """`{"period": "day"}`, or with the anchor: `{"period": "month", "anchor": "2026-01-15T00:00:00Z"}`."""
        body = {"period": self.kind.value}
        if self.anchor is not None:
            body["anchor"] = format_instant(self.anchor)
        return body

    def _month_start(self, year: int, month: int) -> datetime:
        anchor = self.anchor or _MIDNIGHT
        day = min(anchor.day, calendar.monthrange(year, month)[1])
        return datetime(year, month, day, anchor.hour, anchor.minute, anchor.second, tzinfo=UTC)

    def _own(self, window: PeriodWindow) -> PeriodWindow:
        if self.window_at(window.start) != window:
            raise ValueError("not a window of this period")
        return window


def parse_period(kind: str, anchor: str | None) -> Period:
    """A period from the API's `period` and `anchor` (RFC 3339, `Z` or an offset, whole seconds,
    years 2000 to 2999 in UTC). ValueError with a message a 400 can carry."""
    if not isinstance(kind, str) or kind not in {member.value for member in PeriodKind}:
        allowed = " or ".join(repr(member.value) for member in PeriodKind)
        raise ValueError(f"period must be {allowed}, not {kind!r:.{_SHOWN}}")
    if anchor is None:
        return Period(PeriodKind(kind))
    return Period(PeriodKind(kind), _parse_anchor(anchor))


def _parse_anchor(text: str) -> datetime:
    match = _RFC3339.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"anchor must be an RFC 3339 timestamp like 2026-01-15T00:00:00Z, not {text!r:.{_SHOWN}}")
    year, month, day, hour, minute, second, fraction, zulu, sign, offset_hours, offset_minutes = match.groups()
    if fraction is not None:
        raise ValueError("anchor must be a whole second (no fractional seconds)")
    if zulu:
        zone = UTC
    else:
        if int(offset_hours) > 23 or int(offset_minutes) > 59:
            raise ValueError(f"anchor has no such UTC offset: {text!r}")
        offset = timedelta(hours=int(offset_hours), minutes=int(offset_minutes))
        zone = timezone(-offset if sign == "-" else offset)
    try:
        local = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=zone)
    except ValueError as error:  # no such date or time (Feb 30, 24:00, a leap second)
        raise ValueError(f"anchor is not a valid date and time: {text!r}") from error
    try:
        return local.astimezone(UTC)
    except OverflowError as error:  # before year 1 or after 9999 in UTC
        raise ValueError(_ANCHOR_RANGE) from error


def _utc(instant: datetime, name: str) -> datetime:
    if not isinstance(instant, datetime) or instant.tzinfo is None or instant.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime (with a UTC offset)")
    try:
        return instant.astimezone(UTC)
    except OverflowError as error:  # within a day of datetime's year 1 or 9999
        raise ValueError(f"{name} out of range") from error


def _month_before(year: int, month: int) -> tuple[int, int]:
    return (year - 1, 12) if month == 1 else (year, month - 1)


def _month_after(year: int, month: int) -> tuple[int, int]:
    return (year + 1, 1) if month == 12 else (year, month + 1)
