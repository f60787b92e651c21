"""Fair to every tenant (docs/security.md): one tenant flooding past its rate limit is answered 429
`TenantThrottled`, and only that tenant; another tenant's requests meanwhile all succeed. Through
the whole system, every request signed by the tenant's own session."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from hybrid_counter_client import HybridCounterError, LimitsClient, RateLimit

from local.product import new_account
from tests.integration.conftest import RunningSystem
from tests.integration.test_security import tenant_client

# Windows of 1 s allowing 1 request: the lowest rate, which four clients sending as fast as the
# local runtime answers exceed many times over, however loaded the machine (at least 9 requests a
# second measured in a full `make test` on 2 cores; 200 on an idle machine).
RATE = RateLimit(requests_per_second=1, burst_seconds=1)
FLOODING_CLIENTS = 4
FLOOD_SECONDS = 3  # at least: windows admit again as they turn, so the flood spans several
REFUSALS = 10  # the flood goes on until it has been refused this often
DEADLINE_SECONDS = 60


def test_a_flooding_tenant_gets_429s_while_another_tenant_is_served(running_system: RunningSystem) -> None:
    flooder, neighbour = (new_account(running_system.client, prefix="fair", limit=5) for _ in range(2))
    # Its own rate, set by the admin before the tenant's first request.
    running_system.client.put_account(flooder, limit=5, rate_limit=RATE)
    # Each tenant's client makes one request per call: every answer is counted here.
    flooding, served = tenant_client(running_system, flooder), tenant_client(running_system, neighbour)

    def listed(client: LimitsClient, account_id: str) -> HybridCounterError | None:
        """One request: None when it was answered, else the error it was refused with."""
        try:
            client.list_resources_page(account_id)
            return None
        except HybridCounterError as error:
            return error

    stop, refused_enough = threading.Event(), threading.Event()
    lock, refusals = threading.Lock(), [0]

    def flood() -> list[HybridCounterError | None]:
        replies = []
        while not stop.is_set():
            replies.append(listed(flooding, flooder))
            if replies[-1] is not None:
                with lock:
                    refusals[0] += 1
                    if refusals[0] >= REFUSALS:
                        refused_enough.set()
        return replies

    def flooding_on(started: float) -> bool:
        elapsed = time.monotonic() - started
        return (elapsed < FLOOD_SECONDS or not refused_enough.is_set()) and elapsed < DEADLINE_SECONDS

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=FLOODING_CLIENTS) as pool:
        floods = [pool.submit(flood) for _ in range(FLOODING_CLIENTS)]
        neighbour_replies = []
        while flooding_on(started):
            neighbour_replies.append(listed(served, neighbour))
        stop.set()
        flood_replies = [reply for future in floods for reply in future.result()]
    elapsed = time.monotonic() - started

    admitted = [reply for reply in flood_replies if reply is None]
    throttled = [reply for reply in flood_replies if reply is not None]
    rate = len(flood_replies) / elapsed
    assert len(throttled) >= REFUSALS, (
        f"{len(throttled)} refused of {len(flood_replies)} in {elapsed:.0f} s ({rate:.1f}/s)"
    )
    # Windows are cut on the function's clock: one more than the flood's seconds can overlap it.
    windows = int(elapsed) + 2
    assert len(admitted) <= RATE.requests_per_second * windows, (len(admitted), windows)
    for error in throttled:
        assert (error.status, error.code) == (429, "TenantThrottled"), error
        assert (error.retry_after or 0) >= 1, error.retry_after
    assert neighbour_replies
    assert all(reply is None for reply in neighbour_replies), {str(reply) for reply in neighbour_replies}
