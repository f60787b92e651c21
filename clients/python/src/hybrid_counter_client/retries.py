"""When the client tries a call again, and how long it waits first.

Retried: what `HybridCounterError.retryable` says (errors.py): 429s, 5xx and lost answers. The wait
before attempt n+1 is the answer's `Retry-After` (0 without one) plus a full-jitter backoff: a
random share of `step * 2**(n-1)`, capped at `max_delay_seconds`, where the step is the
`Retry-After` or, without one, `base_delay_seconds` ("Exponential Backoff And Jitter", AWS
Architecture Blog). So a client never comes back before `Retry-After`, clients throttled together
spread over the next `Retry-After` rather than all come back at its end, and a wait grows when the
same answer comes back. A call stops after `max_attempts` requests, or when not even `Retry-After`
is left before `deadline_seconds` from its start; a wait drawn past the deadline is drawn again
within what is left, so the last attempt is not given up for one long draw. It then raises the
last answer's error, with `attempts` set.

The defaults ride out a burst of a few hundred callers past the API function's concurrency, whose
throttles (503 `ServiceUnavailable`, `Retry-After: 1`) come back until the burst is served: a
caller whose attempts or deadline run out before its turn comes gets the 503. A burst takes about
its callers times the time each takes, over the concurrency: locally, 10 sandboxes on 2 cores
served about 11 calls a second (200 callers, half created and half refused LimitExceeded, in
18.5 s), so 300 callers need about 25 s; 30 s gives that room. Within it, waits of 1 s plus a
jittered share of 1, 2, 4, 8, 10 s... make about 8 attempts, and 10 leaves a caller whose draws
were short its turn too. On AWS a throttled call is rare (an account runs 1,000 functions at once
by default) and each costs the function nothing: the gateway answers it.

Each retried call is safe to send again (clients/python/README.md, "Retries"): a read and a PUT
or create with the call's one Idempotency-Key change nothing twice; a delete whose earlier attempt
may have landed takes the ResourceNotFound after it as done. A resize sends one Idempotency-Key
and one If-Match on every attempt: the version the caller gave, or the one the client read just
before (`resize_again`), so a retry after its own first attempt landed answers the resource as
it is, and a retry after another caller's resize is PreconditionFailed, never applied over it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hybrid_counter_client.errors import (
    HybridCounterError,
    NoResponse,
    PreconditionFailed,
    ResourceNotFound,
    ServerError,
)
from hybrid_counter_client.operations import Call

logger = logging.getLogger("hybrid_counter_client")


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 10
    deadline_seconds: float = 30.0
    base_delay_seconds: float = 0.2
    max_delay_seconds: float = 10.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def wait(
        self, attempt: int, retry_after: float | None, random: Callable[[], float], left: float | None = None
    ) -> float | None:
        """The wait after the `attempt`-th request (1 for the first) was answered `retry_after`;
        with `left` (seconds to the deadline), one that ends within it, or None if `retry_after`
        does not fit in it."""
        floor = retry_after or 0.0
        step = retry_after or self.base_delay_seconds
        ceiling = min(self.max_delay_seconds, step * 2.0 ** (attempt - 1))
        wait = floor + random() * ceiling
        if left is None or wait <= left:
            return wait
        if floor >= left:
            return None
        return floor + random() * (left - floor)


class Attempts:
    """One call's attempts so far, on the client's clock."""

    def __init__(
        self, call: Call[Any], policy: RetryPolicy, clock: Callable[[], float], random: Callable[[], float]
    ) -> None:
        self._call = call
        self._policy = policy
        self._clock = clock
        self._random = random
        self._started = clock()
        self.made = 0
        # A 5xx or a lost answer: that request may have landed, and a later answer is about it.
        self._earlier_may_have_landed = False

    @property
    def may_have_landed(self) -> bool:
        """Whether a request of the call so far may have landed (answered a 5xx, or not at all)."""
        return self._earlier_may_have_landed

    def gone_after_landing(self, error: HybridCounterError) -> bool:
        """A ResourceNotFound after an attempt that may have landed: that attempt removed it."""
        return isinstance(error, ResourceNotFound) and self._earlier_may_have_landed

    def after(self, error: HybridCounterError) -> float | None:
        """The seconds to wait before trying again after a request answered `error`, or None to
        give up (`error` then carries the number of attempts)."""
        self.made += 1
        error.attempts = self.made
        if isinstance(error, ServerError | NoResponse):
            self._earlier_may_have_landed = True
        if not error.retryable or self.made >= self._policy.max_attempts:
            return None
        left = self._policy.deadline_seconds - (self._clock() - self._started)
        wait = self._policy.wait(self.made, error.retry_after, self._random, left)
        if wait is None:
            return None
        logger.info(
            "%s answered %s %s; attempt %d in %.2f s",
            self._call.operation.operation_id,
            error.status,
            error.code,
            self.made + 1,
            wait,
        )
        return wait


# How many times a resize whose If-Match the client read itself reads the resource: the first
# read, and one more after each PreconditionFailed of `resize_again`'s.
RESIZE_READS = 4


def resize_again(error: HybridCounterError, attempts: Attempts, reads: int) -> bool:
    """Whether a resize whose If-Match is the version the client read (the caller gave none) reads
    the resource again and sends again with the new version, after its attempts ended in `error`:
    only for a PreconditionFailed when none of them may have landed (each was answered a 429 or the
    412), so another caller's resize landed between the read and the PATCH and this one did not;
    at most RESIZE_READS reads in all. After an attempt that may have landed, the 412 may follow
    this resize's own landing, overtaken by another: the caller gets it, and reads for itself."""
    return isinstance(error, PreconditionFailed) and not attempts.may_have_landed and reads < RESIZE_READS
