"""The IAM actions each function's handler needs, recorded from the calls its SDK clients make.

A call is attributed to the function whose handler module is on the stack when the call is made
(the handlers build their clients once, so the client itself does not say). A transaction needs
the action of each of its parts ("Using IAM with DynamoDB transactions").
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import Any

from functions.shared.wiring import Wiring

HANDLER_MODULES = {
    "functions.api.handler": "api",
    "functions.stream_consumer.handler": "consumer",
    "functions.redrive.handler": "redrive",
    "functions.sweeper.handler": "sweeper",
}
# Two functions of one module, each with its own role: told apart by the record handler each
# one's batch handler calls (functions/plan_rollout/handler.py).
HANDLER_FUNCTIONS = {
    ("functions.plan_rollout.handler", "page_versions"): "plan_pager",
    ("functions.plan_rollout.handler", "handle_message"): "plan_worker",
}
TRANSACT_WRITE_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}

Needed = set[tuple[str, str]]  # (IAM action, "table" | "index/<name>" | "stream")


def needed(service: str, operation: str, params: dict[str, Any]) -> Needed:
    if service == "dynamodbstreams":
        return {(f"dynamodb:{operation}", "stream")}
    if operation == "TransactWriteItems":
        return {(f"dynamodb:{TRANSACT_WRITE_ACTIONS[next(iter(part))]}", "table") for part in params["TransactItems"]}
    if operation == "TransactGetItems":
        return {("dynamodb:GetItem", "table")}
    where = f"index/{params['IndexName']}" if params.get("IndexName") else "table"
    return {(f"dynamodb:{operation}", where)}


class CallRecorder:
    def __init__(self) -> None:
        self.by_function: dict[str, Needed] = defaultdict(set)

    def install(self, wiring: Wiring) -> None:
        """Record the calls of this wiring's clients (a function's handler is given it)."""
        for client in (wiring.dynamodb, wiring.streams):
            client.meta.events.register("before-parameter-build", self._record)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        function = self._calling_function()
        if function is not None:
            self.by_function[function] |= needed(model.service_model.service_name, model.name, params)

    @staticmethod
    def _calling_function() -> str | None:
        frame = sys._getframe(2)
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            function = HANDLER_MODULES.get(module) or HANDLER_FUNCTIONS.get((module, frame.f_code.co_name))
            if function is not None:
                return function
            frame = frame.f_back  # type: ignore[assignment]
        return None
