"""A Lambda context object with the attributes the handlers and Powertools read."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field


@dataclass
class FakeLambdaContext:
    function_name: str = "test-function"
    memory_limit_in_mb: int = 256
    timeout_seconds: float = 30.0
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_seconds - (time.monotonic() - self._started)) * 1000))
