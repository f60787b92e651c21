"""`python -m ops events refusals replay`: the refusals' dead-letter queue (docs/events.md,
"Refused creates"), each message handled as the function that failed it would have.

The queue holds two kinds of message. A batch of refusal lines the aggregator failed three times
is CloudWatch Logs' payload itself (Lambda's dead-letter queue keeps a failed asynchronous
invocation's event as the message body: Lambda developer guide, "Capturing records of Lambda
asynchronous invocations"); it is counted with the aggregator's core and adapters. A window the
emitter failed five times is the windows queue's message; it is announced with the emitter's.

Repeating it is harmless, as each function's own retries are: a window remembers the batches it
counted, so a payload counted before adds nothing (and has the window's announcement scheduled
again while it is open, which the emitter does once); a window announced already is not announced
again; and a payload of a minute announced since is counted in no event.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from functions.adapters.refusal_payloads import refusals_of
from functions.core.errors import StoreUnavailable
from functions.core.refusals import (
    AggregateReport,
    AnnouncementQueue,
    Window,
    WindowState,
    WindowStore,
    aggregate,
    announce,
    parse_window_message,
)
from functions.shared.clock import Clock
from functions.shared.config import ConfigurationError, FunctionEnvironment, Settings
from ops.commands import handle_each_message
from ops.stack import EXIT_ERROR, EXIT_OK, OpsError

_WINDOW_FIELDS = {"accountId", "resourceType", "start"}

# The aggregator's settings `replay` counts with, read from the deployed function's environment.
AGGREGATOR_SETTINGS = ("table_name", "refusal_queue_url", "refusal_grace")


@dataclass(frozen=True)
class AggregatorSettings:
    windows_queue_url: str
    grace: timedelta


def aggregator_settings(function_environment: dict[str, str]) -> AggregatorSettings:
    """The deployed aggregator's windows queue and grace (a grace it does not set is unset here
    too, so both use the same default)."""
    names = [FunctionEnvironment.variable(setting) for setting in AGGREGATOR_SETTINGS]
    environment = {name: function_environment[name] for name in names if name in function_environment}
    try:
        settings = Settings.from_env(environment)
    except ConfigurationError as error:
        raise OpsError(f"the refusal aggregator's deployed settings are invalid: {error}") from error
    if settings.refusal_queue_url is None:
        variable = FunctionEnvironment.variable("refusal_queue_url")
        raise OpsError(f"the refusal aggregator's environment has no {variable}: is the stack fully deployed?")
    return AggregatorSettings(settings.refusal_queue_url, settings.refusal_grace)


@dataclass(frozen=True)
class WindowOutcome:
    window: Window
    announced: WindowState | None  # None: nothing to announce (announced already, or never opened)

    def to_json(self) -> dict[str, Any]:
        quota = self.window.quota
        refused = None if self.announced is None else self.announced.refused
        return {
            "accountId": quota.account_id,
            "resourceType": quota.resource_type,
            "start": self.window.name,
            "announced": self.announced is not None,
            "refused": refused,
            **({"shadow": True} if self.window.shadow else {}),  # a shadow quota's window (docs/plans.md)
        }


@dataclass
class RefusalsReplay:
    payloads: dict[str, AggregateReport] = field(default_factory=dict)  # message id -> what its lines did
    windows: dict[str, WindowOutcome] = field(default_factory=dict)  # message id -> its window's announcement
    left: dict[str, str] = field(default_factory=dict)  # message id -> why; left in the queue

    @property
    def exit_code(self) -> int:
        return EXIT_ERROR if self.left else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {
            "payloads": {message_id: asdict(report) for message_id, report in self.payloads.items()},
            "windows": {message_id: outcome.to_json() for message_id, outcome in self.windows.items()},
            "left": self.left,
        }


class NeitherShape(ValueError):
    """A message that is neither a subscription's payload nor a window's message."""


def replay(
    sqs: Any, queue_url: str, store: WindowStore, windows_queue: AnnouncementQueue, clock: Clock, grace: timedelta
) -> RefusalsReplay:
    """Handle every message of the refusals' dead-letter queue; delete each once handled, and leave
    one that is neither shape, or whose handling failed, for another run."""
    report = RefusalsReplay()

    def count_or_announce(message_id: str, body: str) -> bool:
        try:
            handled = _handle(body, store, windows_queue, clock, grace)
        except NeitherShape as error:
            report.left[message_id] = str(error)
            return False
        except (StoreUnavailable, ClientError, BotoCoreError) as error:
            report.left[message_id] = f"failed, harmless to replay again: {error}"
            return False
        if isinstance(handled, WindowOutcome):
            report.windows[message_id] = handled
        else:
            report.payloads[message_id] = handled
        return True

    handle_each_message(sqs, queue_url, count_or_announce)
    return report


def _handle(
    body: str, store: WindowStore, windows_queue: AnnouncementQueue, clock: Clock, grace: timedelta
) -> AggregateReport | WindowOutcome:
    try:
        fields = json.loads(body)
    except ValueError as error:
        raise NeitherShape(f"not JSON: {error}") from error
    if isinstance(fields, dict) and "awslogs" in fields:
        try:
            refusals = refusals_of(fields)
        except (ValueError, KeyError, TypeError, OSError, zlib.error) as error:
            raise NeitherShape(f"not a CloudWatch Logs payload: {error!r}") from error
        return aggregate(refusals, store, windows_queue, clock.now(), grace)
    if isinstance(fields, dict) and fields.keys() >= _WINDOW_FIELDS:
        try:
            window = parse_window_message(body)
        except (ValueError, TypeError) as error:
            raise NeitherShape(f"not a window's message: {error}") from error
        return WindowOutcome(window, announce(window, store, clock.now()))
    raise NeitherShape("neither a CloudWatch Logs payload nor a window's message")
