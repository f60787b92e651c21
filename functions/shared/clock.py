"""The wall clock: the one place the functions and the operator CLI read the time of day.

Whatever needs "now" is given a `Clock`: a function's comes from its `Wiring` (`wiring.clock`),
the CLI's from its context. Tests give theirs a clock set to the time they mean
(tests/support/clock.py), so no test depends on the hour or the date it runs at. Ruff's banned-api
rule (TID251, pyproject.toml) refuses every other read of the wall clock in functions/ and ops/.
`time.monotonic`, which measures durations and never tells the time of day, stays allowed.

The local runtime can run its functions on a shifted time of day (a chaos run over midnight:
docs/local-runtime.md, "A shifted clock"): it then names, in `CLOCK_OFFSET_ENV`, a file holding an
offset in seconds, and `clock_from_environment` gives the wiring a clock that adds it. The
deployed stack never sets that variable (infra builds every function's environment from
functions/shared/config.py, which does not name it), so on AWS the functions run on the system clock.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Clock:
    """UTC time from the system clock. A test's clock overrides `now` only."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def epoch_ms(self) -> int:
        """Milliseconds since the epoch, rounded down (API Gateway's `requestTimeEpoch`)."""
        return (self.now() - EPOCH) // timedelta(milliseconds=1)

    def epoch_seconds(self) -> int:
        """Seconds since the epoch, rounded down (DynamoDB TTL's unit)."""
        return (self.now() - EPOCH) // timedelta(seconds=1)


# The local runtime's variable naming the offset file (local/clock.py CLOCK_OFFSET_ENV, the same name).
CLOCK_OFFSET_ENV = "LOCAL_LAMBDA_CLOCK_OFFSET_FILE"


class ShiftedClock(Clock):
    """The system clock plus the offset (seconds) that the file at `path` holds now: read at every
    `now`, so a run that moves it moves every process reading it at once."""

    def __init__(self, path: str) -> None:
        self._path = path

    def now(self) -> datetime:
        with open(self._path, encoding="utf-8") as offset:
            return super().now() + timedelta(seconds=float(offset.read()))


def clock_from_environment() -> Clock:
    """The system clock, or, when the local runtime names an offset file, the clock it shifts."""
    path = os.environ.get(CLOCK_OFFSET_ENV)
    return ShiftedClock(path) if path else Clock()
