"""Per-tenant rate limits: one tenant's flood is answered 429 for that tenant only.

Time is cut into windows of `window_seconds` (1 to 60), each allowing `requests_per_second *
window_seconds` requests to the account (its burst): the rate over a window is
`requests_per_second`, and up to the burst may come at once. A window's count lives in a
DynamoDB item of its own (`RATE#<account>#<window>`), raised by a conditional `ADD` that never
lets it pass the allowance: the count is exact however many execution environments serve the
account.

A busy tenant's window is split into *parts*, one item each, holding an equal share of the
allowance: every environment leases a few times a window, so one item would take about four writes
a window per environment, and a tenant served by hundreds of environments would pass the 1,000
writes a second one item takes. An environment leases from a part picked at random, and moves on
to another when that part is spent; the window is spent for it once it found PARTS_TRIED parts spent
(parts fill evenly, so the window then nearly is).

An execution environment does not write once per request. It *leases* a few of the window's
requests at a time and spends them in memory: a quarter of what this environment used in the
previous window, or, beyond that use, as many as it used beyond it (doubling from one), never more
than a tenth of the allowance. So a busy environment writes about four times a
window, an idle one once per request, and tokens leased but unspent (at most a tenth of the
allowance per environment, far less when the load is steady) are the limiter's only error: they
can refuse a request a little early, never admit one too many. Once a window is spent, the
environment refuses the rest of it from memory, so a flood costs no DynamoDB call at all.

docs/security.md says why this and not API Gateway usage plans, and what it costs per request.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from functions.core.errors import StoreUnavailable
from functions.core.model import REQUESTS_PER_SECOND_PER_PART, TenantRate, Window

logger = logging.getLogger(__name__)

# A busy environment's lease: this share of what it used in the previous window ...
LEASES_PER_WINDOW = 4
# ... and never more than this share of a window's allowance, which bounds the tokens one
# environment can hold unspent.
MOST_OF_ALLOWANCE_PER_LEASE = 10
# Parts an environment tries in a window before it takes the window as spent. Parts fill evenly
# (environments pick them at random), so when a few picked at random are spent the window nearly
# is; trying every part would cost each environment a write per part when the window runs out.
PARTS_TRIED = 4
# How long an environment trusts an account's rate override before reading it again.
RATE_CACHE_SECONDS = 10.0
# The API logs each refusal as this message with the tenant under this key, which the stack's
# Contributor Insights rule ranks (infra/monitoring.py).
THROTTLED_TENANT_MESSAGE = "tenant throttled"
TENANT_LOG_KEY = "tenant"
# Accounts whose lease state one environment keeps before it forgets those of past windows.
TRACKED_ACCOUNTS = 4096


# A tenth of the stage's default 10,000 requests a second (infra/options.py), in 2 s windows.
DEFAULT_TENANT_RATE = TenantRate(requests_per_second=1000, window_seconds=2)


class WindowStore(Protocol):
    def lease(self, account_id: str, window: Window, part: int, wanted: int) -> int:
        """Count up to `wanted` more requests in part `part` of the account's window, never past
        that part's allowance; how many were counted (0 when the part is spent). One conditional
        write, or two when fewer than `wanted` are left."""
        ...

    def read_rate(self, account_id: str) -> TenantRate | None:
        """The account's own rate, set by an admin; None for the default (or no account)."""
        ...


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after_seconds: int = 0
    # False when the window store failed and the request was let through (the limiter fails open:
    # it guards fairness, and a DynamoDB hiccup must not become every tenant's 429).
    checked: bool = True


@dataclass
class _Held:
    """One account's leases in this environment."""

    window: int
    part: int = 0  # the part of the window this environment leases from
    tokens: int = 0  # leased and not yet spent
    used: int = 0  # spent in this window
    used_before: int = 0  # spent in the previous window
    untried: list[int] | None = None  # the parts still to try, once the first was found spent
    spent: bool = False  # the window's allowance is all leased


class TenantLimiter:
    """Decides, per request, whether an account is within its rate (one per execution environment).

    `clock_ms` tells the time of day (epoch ms, `Wiring.clock`): every environment must agree on
    the window; `monotonic` only measures how long a learnt rate has been cached."""

    def __init__(
        self,
        store: WindowStore,
        default: TenantRate,
        clock_ms: Callable[[], int],
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        requests_per_part: float = REQUESTS_PER_SECOND_PER_PART,
    ) -> None:
        self._store = store
        self._default = default
        self._requests_per_part = requests_per_part
        self._clock_ms = clock_ms
        self._monotonic = monotonic
        self._rng = rng or random.Random()  # noqa: S311 - spreading environments over parts, not a secret
        self._held: dict[str, _Held] = {}
        self._rates: dict[str, tuple[float, TenantRate]] = {}

    def admit(self, account_id: str) -> Decision:
        rate = self.rate_of(account_id)
        now_ms = self._clock_ms()
        window = rate.window_at(now_ms, self._requests_per_part)
        held = self._held_in(account_id, window)
        if held.tokens == 0 and not held.spent:
            try:
                held.tokens = self._lease(account_id, window, held)
            except StoreUnavailable as error:
                logger.warning("rate limit not checked for %s: %s", account_id, error)
                return Decision(allowed=True, checked=False)
            held.spent = held.tokens == 0
        if held.tokens == 0:
            return Decision(allowed=False, retry_after_seconds=max(1, math.ceil((window.end_ms - now_ms) / 1000)))
        held.tokens -= 1
        held.used += 1
        return Decision(allowed=True)

    def rate_of(self, account_id: str) -> TenantRate:
        """The account's rate: its override, read at most every RATE_CACHE_SECONDS, or the default."""
        cached = self._rates.get(account_id)
        if cached is not None and self._monotonic() - cached[0] < RATE_CACHE_SECONDS:
            return cached[1]
        try:
            rate = self._store.read_rate(account_id) or self._default
        except StoreUnavailable as error:
            logger.warning("rate of %s not read, using the default: %s", account_id, error)
            rate = self._default
        self.learn(account_id, rate)
        return rate

    def learn(self, account_id: str, rate: TenantRate | None) -> None:
        """Take `rate` as the account's (an admin's change seen by this environment)."""
        if len(self._rates) >= TRACKED_ACCOUNTS:
            self._rates.clear()
        self._rates[account_id] = (self._monotonic(), rate or self._default)

    @property
    def default(self) -> TenantRate:
        return self._default

    def _lease(self, account_id: str, window: Window, held: _Held) -> int:
        """Lease from this environment's part, moving on to another once it is spent (a lease got
        less than it asked: what the part had left, or nothing), up to PARTS_TRIED parts in all,
        picked at random by each environment, so the environments of a spent part do not all
        crowd into the same next one."""
        while held.part >= 0:
            wanted = self._lease_size(held, window)
            leased = self._store.lease(account_id, window, held.part, wanted)
            if leased < wanted:
                if held.untried is None:
                    others = [part for part in range(window.parts) if part != held.part]
                    held.untried = self._rng.sample(others, min(len(others), PARTS_TRIED - 1))
                held.part = held.untried.pop() if held.untried else -1
            if leased:
                return leased
        return 0

    def _held_in(self, account_id: str, window: Window) -> _Held:
        held = self._held.get(account_id)
        if held is not None and held.window == window.index:
            return held
        if len(self._held) >= TRACKED_ACCOUNTS:
            self._held = {name: state for name, state in self._held.items() if state.window >= window.index}
        used_before = held.used if held is not None and held.window == window.index - 1 else 0
        part = self._rng.randrange(window.parts)
        self._held[account_id] = fresh = _Held(window=window.index, part=part, used_before=used_before)
        return fresh

    @staticmethod
    def _lease_size(held: _Held, window: Window) -> int:
        # A quarter (rounded up) of what this environment used in the last window: about four
        # writes a window however little it used, and at most that quarter left unspent. What it uses beyond the last
        # window's use doubles (1, 1, 2, 4, ... from nothing), so a rising load needs a few writes
        # more, not one a request. Doubling all the way (as many as used so far) overshot by up
        # to half of what was leased, which, summed over hundreds of environments, spent a busy
        # tenant's window (or one of its parts) while much of it was unused.
        wanted = max(-(-held.used_before // LEASES_PER_WINDOW), 1, held.used - held.used_before)
        # A tenth of the whole window's allowance; a lease larger than its part has left gets
        # what is left (WindowStore.lease).
        return min(wanted, max(1, window.allowance // MOST_OF_ALLOWANCE_PER_LEASE))
