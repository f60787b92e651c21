"""A stage's throttle, as API Gateway applies it: a token bucket of `burst` requests, refilled at
`rate` a second, shared by every method; a request that finds it empty is answered 429 (API
Gateway developer guide, "Throttle requests to your REST APIs for better throughput"). Read from
the stage's method settings for `*` `/*` in the deployed template."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from local.capacity.limits import Bucket
from local.sigv4 import Refusal

TOO_MANY_REQUESTS = Refusal("THROTTLED", 429, "Too Many Requests")


@dataclass
class StageThrottle:
    rate: float
    burst: float
    clock: Callable[[], float] = time.monotonic
    _bucket: Bucket | None = None  # the partition limits' token bucket; full at the first request
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> bool:
        """One request's token, if the bucket has one."""
        with self._lock:
            now = self.clock()
            if self._bucket is None:
                self._bucket = Bucket(self.rate, self.burst, self.burst, now)
            if self._bucket.refill(now) < 1:
                return False
            self._bucket.tokens -= 1
            return True

    @classmethod
    def from_template(cls, template: Mapping[str, Any]) -> StageThrottle | None:
        for resource in (template.get("Resources") or {}).values():
            if resource.get("Type") != "AWS::ApiGateway::Stage":
                continue
            for setting in (resource.get("Properties") or {}).get("MethodSettings") or []:
                if setting.get("HttpMethod") == "*" and setting.get("ResourcePath") == "/*":
                    rate, burst = setting.get("ThrottlingRateLimit"), setting.get("ThrottlingBurstLimit")
                    if rate is not None and burst is not None:
                        return cls(float(rate), float(burst))
        return None
