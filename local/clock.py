"""A shifted time of day for the local runtime: the system clock plus an offset its caller moves.

What a test harness does with an injected clock (tests/support/clock.py), a chaos run needs of a
real running system: the same instant, moved on purpose (over midnight, a month end), in every
process that tells the time. `RuntimeSettings.clock` gives the runtime one; its stand-ins stamp
with it what AWS would stamp (API Gateway's `requestTimeEpoch`, a schedule's event time), and
every sandbox is told where the offset is kept (`CLOCK_OFFSET_ENV`, a file of seconds, as
libfaketime's `FAKETIME_TIMESTAMP_FILE` tells a process behind an `AWS_LAMBDA_EXEC_WRAPPER`). The
function code that honours it is the product's (functions/shared/clock.py `clock_from_environment`):
this file imports none of it. Without a clock in the settings nothing is set, and everything
runs on the system clock, as on AWS.

The offset only moves forward or stays: moving it while requests are in flight makes their
leases look older than they are (each caller decides when that is safe: chaos/run.py moves it
while no client request is in flight).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta

# The variable naming the offset file in every sandbox's environment. The product's clock reads
# the same name (functions/shared/clock.py CLOCK_OFFSET_ENV; tests/runtime/test_shifted_clock.py
# checks that the two agree).
CLOCK_OFFSET_ENV = "LOCAL_LAMBDA_CLOCK_OFFSET_FILE"


class ShiftedClock:
    """The system clock plus an offset in seconds, kept in a file that every sandbox reads."""

    def __init__(self, path: str | None = None) -> None:
        if path is None:
            handle, path = tempfile.mkstemp(prefix="local-clock-", suffix=".offset")
            os.close(handle)
        self.path = path
        self._lock = threading.Lock()
        self._offset = 0.0
        self._write(0.0)

    @property
    def offset(self) -> timedelta:
        return timedelta(seconds=self._offset)

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self._offset)

    def epoch_ms(self) -> int:
        return int((time.time() + self._offset) * 1000)

    def set(self, moment: datetime) -> None:
        """It is `moment` now, for the runtime and every sandbox; it keeps moving from there."""
        with self._lock:
            self._offset = (moment - datetime.now(UTC)).total_seconds()
            self._write(self._offset)

    def advance(self, by: timedelta) -> None:
        self.set(self.now() + by)

    def _write(self, offset: float) -> None:
        # Written whole and renamed over the old file: a sandbox reads the old offset or the new.
        temporary = f"{self.path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(repr(offset))
        os.replace(temporary, self.path)
