"""Handlers the function-pool tests run in real sandboxes (spawned processes)."""

from __future__ import annotations

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
