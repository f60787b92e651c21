"""Fair to every tenant (docs/security.md): one tenant flooding past its rate limit is answered 429
`TenantThrottled`, and only that tenant; another tenant's requests meanwhile all succeed. Through
the whole system, every request signed by the tenant's own session."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from local.http_client import Reply
from tests.integration.conftest import System
from tests.integration.test_security import tenant_api

# Windows of 1 s allowing 1 request: the lowest rate, which four clients sending as fast as the
# local runtime answers exceed many times over, however loaded the machine (at least 9 requests a
# second measured in a full `make test` on 2 cores; 200 on an idle machine).
RATE = {"requestsPerSecond": 1, "burstSeconds": 1}
FLOODING_CLIENTS = 4
FLOOD_SECONDS = 3  # at least: windows admit again as they turn, so the flood spans several
REFUSALS = 10  # the flood goes on until it has been refused this often
DEADLINE_SECONDS = 60


def test_a_flooding_tenant_gets_429s_while_another_tenant_is_served(system: System) -> None:
    flooder, neighbour = (system.api.new_account(prefix="fair", limit=5) for _ in range(2))
    # Its own rate, set by the admin before the tenant's first request.
    assert system.api.request("PUT", f"/accounts/{flooder}", {"limit": 5, "rateLimit": RATE}).status == 200
    flooding, served = tenant_api(system, flooder), tenant_api(system, neighbour)

    stop, refused_enough = threading.Event(), threading.Event()
    lock, refusals = threading.Lock(), [0]

    def flood() -> list[Reply]:
        replies = []
        while not stop.is_set():
            replies.append(flooding.request("GET", f"/accounts/{flooder}/resources"))
            if replies[-1].status != 200:
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
            neighbour_replies.append(served.request("GET", f"/accounts/{neighbour}/resources"))
        stop.set()
        flood_replies = [reply for future in floods for reply in future.result()]
    elapsed = time.monotonic() - started

    admitted = [reply for reply in flood_replies if reply.status == 200]
    throttled = [reply for reply in flood_replies if reply.status != 200]
    rate = len(flood_replies) / elapsed
    assert len(throttled) >= REFUSALS, (
        f"{len(throttled)} refused of {len(flood_replies)} in {elapsed:.0f} s ({rate:.1f}/s)"
    )
    # Windows are cut on the function's clock: one more than the flood's seconds can overlap it.
    windows = int(elapsed) + 2
    assert len(admitted) <= RATE["requestsPerSecond"] * windows, (len(admitted), windows)
    for reply in throttled:
        assert reply.status == 429, reply.body
        assert reply.body["error"]["code"] == "TenantThrottled"
        assert int(reply.headers["Retry-After"]) >= 1
    assert neighbour_replies
    assert all(reply.status == 200 for reply in neighbour_replies), {reply.status for reply in neighbour_replies}
