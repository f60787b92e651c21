"""Fair to every tenant (docs/security.md): one tenant flooding at ten times its rate limit is
answered 429 `TenantThrottled`, and only that tenant; another tenant's requests meanwhile all
succeed. Through the whole system, every request signed by the tenant's own session."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from local.http_client import Reply
from tests.integration.conftest import System
from tests.integration.test_security import tenant_api

# Windows of 1 s allowing 1 request: the lowest rate, so that ten times it stays well within what
# the local runtime serves on a loaded 2-core CI machine (2 requests/s needed 20/s of the flood,
# and 3 flooding clients once reached only 18.7 there).
RATE = {"requestsPerSecond": 1, "burstSeconds": 1}
FLOOD_SECONDS = 3
FLOODING_CLIENTS = 4


def test_a_flooding_tenant_gets_429s_while_another_tenant_is_served(system: System) -> None:
    flooder, neighbour = (system.api.new_account(prefix="fair", limit=5) for _ in range(2))
    # Its own rate, set by the admin before the tenant's first request.
    assert system.api.request("PUT", f"/accounts/{flooder}", {"limit": 5, "rateLimit": RATE}).status == 200
    flooding, served = tenant_api(system, flooder), tenant_api(system, neighbour)

    stop = threading.Event()

    def flood() -> list[Reply]:
        replies = []
        while not stop.is_set():
            replies.append(flooding.request("GET", f"/accounts/{flooder}/resources"))
        return replies

    started = time.time()
    with ThreadPoolExecutor(max_workers=FLOODING_CLIENTS) as pool:
        floods = [pool.submit(flood) for _ in range(FLOODING_CLIENTS)]
        neighbour_replies = []
        while time.time() - started < FLOOD_SECONDS:
            neighbour_replies.append(served.request("GET", f"/accounts/{neighbour}/resources"))
        stop.set()
        flood_replies = [reply for future in floods for reply in future.result()]
    elapsed = time.time() - started

    rate = len(flood_replies) / elapsed
    assert rate >= 10 * RATE["requestsPerSecond"], f"the flood reached only {rate:.1f} requests/s"
    admitted = [reply for reply in flood_replies if reply.status == 200]
    throttled = [reply for reply in flood_replies if reply.status != 200]
    # Windows are cut on the function's clock: one more than the flood's seconds can overlap it.
    windows = int(elapsed) + 2
    assert len(admitted) <= RATE["requestsPerSecond"] * windows, (len(admitted), windows)
    assert throttled
    for reply in throttled:
        assert reply.status == 429, reply.body
        assert reply.body["error"]["code"] == "TenantThrottled"
        assert int(reply.headers["Retry-After"]) >= 1
    assert neighbour_replies
    assert all(reply.status == 200 for reply in neighbour_replies), {reply.status for reply in neighbour_replies}
