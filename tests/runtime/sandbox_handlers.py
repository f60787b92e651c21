"""Handlers the function-pool tests run in real sandboxes (processes of their own)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any


def sleep_then_answer(event: dict[str, Any], context: Any) -> dict[str, Any]:
    time.sleep(float(event.get("sleep", 0)))
    return {"slept": event.get("sleep", 0), "remaining_ms": context.get_remaining_time_in_millis()}


def answer_of_size(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A proxy response whose body is `event["characters"]` times `event["character"]`."""
    return {"statusCode": 200, "body": event["character"] * int(event["characters"])}


def time_of_day(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """What the product's functions take for now in this sandbox (the wiring's clock)."""
    from functions.shared.clock import clock_from_environment

    return {"now": clock_from_environment().now().isoformat()}


# The modules this one found imported when it was (a sandbox forked from a server that preloaded
# them has them; a fresh interpreter has none of them), and its own invocations so far.
IMPORTED_BEFORE = sorted(name for name in ("boto3", "pydantic") if name in sys.modules)
_invocations = 0


def _meet(folder: str, parties: int) -> None:
    """Hold this invocation until `parties` invocations have come here (each leaves a file named by
    its process in `folder`), so that they run at once, each in a sandbox of its own."""
    open(os.path.join(folder, str(os.getpid())), "w").close()
    deadline = time.monotonic() + 20
    while len(os.listdir(folder)) < parties and time.monotonic() < deadline:
        time.sleep(0.01)  # polling the folder: the condition, not a guess at how long it takes


def describe_sandbox(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """What this sandbox is: its process, its environment's setting, what it found imported, and
    how many invocations it has run (module state: its own)."""
    global _invocations
    _invocations += 1
    if "rendezvous" in event:
        _meet(event["rendezvous"], int(event["parties"]))
    return {
        "pid": os.getpid(),
        "setting": os.environ.get("SANDBOX_SETTING"),
        "imported_before": IMPORTED_BEFORE,
        "invocations": _invocations,
    }
