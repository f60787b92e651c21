"""moto's EventBridge delivers to the targets it knows, and leaves the others to the local runtime.

Upstream's `Rule.send_to_targets` delivers to log groups, archives, SQS queues and other buses,
calls an API destination only with MOTO_EVENTS_INVOKE_HTTP (without the event as its body and
without the connection's authorization), and raises NotImplementedError for any other target: a
rule sending to an SNS topic makes every PutEvents on its bus answer 500. Here a rule sends to the
targets moto delivers as EventBridge does, and skips the others (SNS topics, API destinations),
which the local runtime routes (local/event_bus.py).
"""

from __future__ import annotations

import copy
from typing import Any


def delivered_by_moto(arn: str) -> bool:
    """Whether moto delivers to a target of this ARN: a log group, a queue, a bus or an archive."""
    parts = arn.split(":", 5)
    if len(parts) < 6:
        return False
    service, resource = parts[2], parts[5]
    return service in ("logs", "sqs") or (service == "events" and resource.startswith(("event-bus/", "archive/")))


def apply() -> None:
    from moto.events.models import Rule

    original = Rule.send_to_targets

    def send_to_targets(self: Rule, original_event: Any, transform_input: bool = True) -> None:
        kept = [target for target in self.targets if delivered_by_moto(target["Arn"])]
        if len(kept) == len(self.targets):
            return original(self, original_event, transform_input)
        shadow = copy.copy(self)  # the rule as stored keeps every target
        shadow.targets = kept
        return original(shadow, original_event, transform_input)

    Rule.send_to_targets = send_to_targets  # type: ignore[method-assign]
