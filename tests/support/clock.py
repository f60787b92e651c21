"""The tests' clock (functions/shared/clock.py is the functions' one): a test says what time it is.

A `FakeClock` starts at a time the test chooses, never at the time the test runs, and then moves
forward at the speed of `time.monotonic`, so stamps taken one after another still differ, as on
a real clock. `set` and `advance` move it on purpose (a sweep an hour later, a lease gone stale).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from functions.core.leases import iso_timestamp
from functions.shared.clock import Clock

# Where a test's clock starts unless the test sets it: any instant would do, since nothing may
# depend on it; this one is neither near midnight nor at a round activity-bucket boundary.
DEFAULT_START = datetime(2026, 11, 25, 13, 37, 11, 250_000, tzinfo=UTC)


class FakeClock(Clock):
    def __init__(self, start: datetime = DEFAULT_START) -> None:
        self._anchor = (start, time.monotonic())  # one tuple: read and replaced whole, thread-safe

    def now(self) -> datetime:
        moment, since = self._anchor
        return moment + timedelta(seconds=time.monotonic() - since)

    def set(self, moment: datetime) -> None:
        """It is `moment` now (it keeps moving from there)."""
        self._anchor = (moment, time.monotonic())

    def advance(self, by: timedelta) -> None:
        self.set(self.now() + by)

    def timestamp(self, offset: timedelta = timedelta(0)) -> str:
        """Now (plus `offset`) as the functions stamp their writes (ISO 8601, milliseconds, Z)."""
        return iso_timestamp(self.now() + offset)
