"""The wall clock: the one place the functions and the operator CLI read the time of day.

Whatever needs "now" is given a `Clock`: a function's comes from its `Wiring` (`wiring.clock`),
the CLI's from its context. Tests give theirs a clock set to the time they mean
(tests/support/clock.py), so no test depends on the hour or the date it runs at. Ruff's banned-api
rule (TID251, pyproject.toml) refuses every other read of the wall clock in functions/ and ops/.
`time.monotonic`, which measures durations and never tells the time of day, stays allowed.
"""

from __future__ import annotations

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
