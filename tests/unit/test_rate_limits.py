"""Per-tenant rate limits (functions/core/rate_limits.py): windows, leases, and what a flood costs."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from functions.core.errors import StoreUnavailable
from functions.core.model import TenantRate, Window
from functions.core.rate_limits import RATE_CACHE_SECONDS, TenantLimiter

START_MS = 1_763_900_000_000  # on a whole second, so every window below starts on it


@dataclass
class FakeWindows:
    """Windows counted exactly as the conditional ADD does: a lease fits whole or takes what is left."""

    used: Counter[tuple[str, int, int, int]] = field(default_factory=Counter)
    rates: dict[str, TenantRate] = field(default_factory=dict)
    leases: int = 0
    rate_reads: int = 0
    failing: bool = False

    def lease(self, account_id: str, window: Window, part: int, wanted: int) -> int:
        if self.failing:
            raise StoreUnavailable("lease failed", may_have_landed=False)
        assert 0 <= part < window.parts
        self.leases += 1
        key = (account_id, window.length_ms, window.index, part)
        granted = min(wanted, window.part_allowance(part) - self.used[key])
        self.used[key] += granted
        return granted

    def read_rate(self, account_id: str) -> TenantRate | None:
        self.rate_reads += 1
        return self.rates.get(account_id)


@dataclass
class Clock:
    ms: int = START_MS

    def now_ms(self) -> int:
        return self.ms

    def seconds(self) -> float:
        return self.ms / 1000


def limiter(store: FakeWindows, clock: Clock, rate: TenantRate, seed: int = 0) -> TenantLimiter:
    return TenantLimiter(store, rate, clock_ms=clock.now_ms, monotonic=clock.seconds, rng=random.Random(seed))


def test_an_environment_admits_the_burst_then_refuses_until_the_window_ends() -> None:
    store, clock = FakeWindows(), Clock()
    tenant = limiter(store, clock, TenantRate(requests_per_second=5, window_seconds=2))  # 2 s windows of 10
    assert [tenant.admit("acme").allowed for _ in range(12)] == [True] * 10 + [False] * 2
    clock.ms += 500
    refused = tenant.admit("acme")
    assert (refused.allowed, refused.retry_after_seconds) == (False, 2)  # 1.5 s left, rounded up
    clock.ms = START_MS + 2000
    assert tenant.admit("acme").allowed


def test_a_flood_past_the_allowance_costs_no_write() -> None:
    store, clock = FakeWindows(), Clock()
    tenant = limiter(store, clock, TenantRate(requests_per_second=100, window_seconds=1))
    while tenant.admit("acme").allowed:
        pass
    leases = store.leases
    assert not any(tenant.admit("acme").allowed for _ in range(10_000))
    assert store.leases == leases


def test_one_tenant_spent_leaves_another_untouched() -> None:
    store, clock = FakeWindows(), Clock()
    tenant = limiter(store, clock, TenantRate(requests_per_second=3, window_seconds=1))
    assert sum(tenant.admit("flood").allowed for _ in range(30)) == 3
    assert all(tenant.admit("quiet").allowed for _ in range(3))


def test_a_busy_environment_writes_a_few_leases_a_window_not_one_a_request() -> None:
    store, clock = FakeWindows(), Clock()
    tenant = limiter(store, clock, TenantRate(requests_per_second=10_000, window_seconds=1))
    for window in range(3):
        clock.ms = START_MS + window * 1000
        before = store.leases
        for _ in range(2_000):  # a fifth of the allowance, steady
            assert tenant.admit("busy").allowed
        if window == 0:
            assert store.leases - before <= 12  # 1, 1, 2, 4, ...: doubling from nothing
        else:
            assert store.leases - before <= 5  # a quarter of the last window's use each time


@given(
    environments=st.integers(min_value=1, max_value=6),
    requests=st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=400),
    burst=st.integers(min_value=1, max_value=60),
)
def test_environments_together_never_admit_more_than_a_window_allows(
    environments: int, requests: list[int], burst: int
) -> None:
    store, clock = FakeWindows(), Clock()
    rate = TenantRate(requests_per_second=burst, window_seconds=1)
    limiters = [limiter(store, clock, rate) for _ in range(environments)]
    admitted = sum(limiters[pick % environments].admit("acme").allowed for pick in requests)
    assert admitted <= burst
    # Leased and unspent tokens are the only error: each environment holds at most a tenth of the
    # allowance (and at least one lease's worth of a single token).
    assert admitted >= min(len(requests), burst) - environments * max(1, burst // 10)


def test_a_store_failure_lets_the_request_through_unchecked() -> None:
    store, clock = FakeWindows(failing=True), Clock()
    decision = limiter(store, clock, TenantRate(requests_per_second=1, window_seconds=1)).admit("acme")
    assert (decision.allowed, decision.checked) == (True, False)


def test_an_admins_rate_is_read_once_and_trusted_for_a_while() -> None:
    store, clock = FakeWindows(rates={"vip": TenantRate(requests_per_second=2, window_seconds=1)}), Clock()
    tenant = limiter(store, clock, TenantRate(requests_per_second=100, window_seconds=1))
    assert sum(tenant.admit("vip").allowed for _ in range(10)) == 2
    assert store.rate_reads == 1
    store.rates["vip"] = TenantRate(requests_per_second=50, window_seconds=1)
    clock.ms += int(RATE_CACHE_SECONDS * 1000)
    assert tenant.rate_of("vip").burst == 50
    tenant.learn("vip", None)  # this environment set it back to the default itself
    assert tenant.rate_of("vip").burst == 100


@pytest.mark.parametrize(("rate", "window"), [(0, 1), (10, 0), (1, 61), (100_001, 1)])
def test_rates_outside_one_to_sixty_second_windows_are_refused(rate: int, window: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        TenantRate(requests_per_second=rate, window_seconds=window)


def test_a_tenant_at_the_default_rate_counts_each_window_in_one_item() -> None:
    assert TenantRate(requests_per_second=1000, window_seconds=2).parts == 1
    assert TenantRate(requests_per_second=1001, window_seconds=2).parts == 2
    assert TenantRate(requests_per_second=20_000, window_seconds=2).parts == 20
    assert TenantRate(requests_per_second=100_000, window_seconds=1).parts == 100


def test_scaled_partition_limits_split_a_window_into_as_many_more_parts() -> None:
    """At 1/2000 of a partition's capacity (local/runtime.py, scaled_environment) a part takes 0.5
    requests a second: the default tenant's window is split as far as it goes (100 parts), and a
    small window into no more parts than it allows requests."""
    assert TenantRate(requests_per_second=1000, window_seconds=2).window_at(START_MS, 0.5).parts == 100
    assert TenantRate(requests_per_second=20, window_seconds=1).window_at(START_MS, 0.5).parts == 20
    assert TenantRate(requests_per_second=1000, window_seconds=2).window_at(START_MS).parts == 1


def test_environments_with_scaled_parts_spread_their_leases_over_all_of_them() -> None:
    store, clock, rate = FakeWindows(), Clock(), TenantRate(requests_per_second=1000, window_seconds=2)
    for seed in range(200):  # 200 environments, a request each
        environment = TenantLimiter(store, rate, clock_ms=clock.now_ms, rng=random.Random(seed), requests_per_part=0.5)
        assert environment.admit("acct").allowed
    parts = {part for (_, _, _, part) in store.used}
    assert len(parts) > 80  # of 100; a limiter that ignored the scaled size would write part 0 alone


@given(
    requests_per_second=st.integers(min_value=1, max_value=100_000),
    window=st.integers(min_value=1, max_value=60),
    requests_per_part=st.sampled_from([1000.0, 1.0, 0.5, 0.01]),
)
def test_a_windows_parts_add_up_to_its_allowance(
    requests_per_second: int, window: int, requests_per_part: float
) -> None:
    rate = TenantRate(requests_per_second=requests_per_second, window_seconds=window)
    window_at = rate.window_at(START_MS, requests_per_part)
    assert sum(window_at.part_allowance(part) for part in range(window_at.parts)) == rate.burst
    assert all(window_at.part_allowance(part) >= 1 for part in range(window_at.parts))


def test_a_busy_tenants_environments_spread_their_leases_over_the_parts() -> None:
    """Hundreds of environments leasing a few times a window each: on one item, that would be
    hundreds of writes a window on one key; over the parts, each takes its share."""
    store, clock = FakeWindows(), Clock()
    rate = TenantRate(requests_per_second=20_000, window_seconds=2)  # 20 parts of 2,000
    environments = [limiter(store, clock, rate, seed) for seed in range(400)]
    for _ in range(3):  # windows
        for _ in range(50):  # 20,000 requests a window over 400 environments
            for environment in environments:
                assert environment.admit("busy").allowed
        clock.ms += rate.window_ms
    leases_per_part = Counter(part for (_, _, _, part) in store.used)
    assert set(leases_per_part) == set(range(20))
    busiest = max(store.used.values())
    assert busiest <= rate.window_at(START_MS).part_allowance(0)


def test_an_environment_whose_part_is_spent_moves_on_to_the_next() -> None:
    store, clock = FakeWindows(), Clock()
    rate = TenantRate(requests_per_second=3000, window_seconds=1)  # 3 parts of 1,000
    window = rate.window_at(clock.now_ms())
    first = limiter(store, clock, rate, seed=1)
    assert first.admit("busy").allowed
    (part,) = {key[3] for key in store.used}
    # Every other environment has spent this part meanwhile.
    store.used[("busy", window.length_ms, window.index, part)] = window.part_allowance(part)
    admitted = 0
    while first.admit("busy").allowed:
        admitted += 1
    # It went on through the two other parts, whole, and only then refused the window.
    assert admitted == window.part_allowance((part + 1) % 3) + window.part_allowance((part + 2) % 3)
    assert not first.admit("busy").allowed


def test_an_environment_with_a_few_requests_a_window_leases_a_few_times_not_once_a_request() -> None:
    store, clock = FakeWindows(), Clock()
    tenant = limiter(store, clock, TenantRate(requests_per_second=1000, window_seconds=2))
    for window in range(4):
        before = store.leases
        for _ in range(6):
            assert tenant.admit("acme").allowed
        if window:
            assert store.leases - before <= 3  # leases of 2: a quarter of the last window's 6, rounded up
        clock.ms += 2000
