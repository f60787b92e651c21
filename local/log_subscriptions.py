"""CloudWatch Logs subscription filters to Lambda, locally: a function's log lines that a filter's
pattern selects are sent, in batches, to the filter's destination function, invoked
asynchronously, as CloudWatch Logs does ("Using CloudWatch Logs subscription filters",
"Log group-level subscription filters", CloudWatch Logs user guide).

Locally a function's logs are a file (local/functions.py, `LOG_DIR_ENV`), so each filter tails the
file of the function that writes to its log group (the function's `LoggingConfig.LogGroup`). The
emulator's CloudFormation does not keep `AWS::Logs::SubscriptionFilter`, nor a function's
`DeadLetterConfig`, so both are read from the deployed template, as local/gateway_responses.py
reads gateway responses.

The payload is AWS's: `{"awslogs": {"data": base64(gzip(JSON))}}`, the JSON holding `messageType`
(`DATA_MESSAGE`), `owner`, `logGroup`, `logStream`, `subscriptionFilters` and `logEvents` (`id`,
`timestamp` in epoch milliseconds, `message`). The destination is invoked asynchronously: a
failed invocation is retried twice, then its event goes to the function's dead-letter queue ("How
Lambda handles errors and retries with asynchronous invocation"; locally the waits are seconds,
not one and two minutes).

Only the filter pattern syntax the stack uses is understood: one JSON property compared with `=`
to a string or a number, `{ $.field = "value" }` ("Filter pattern syntax for metric filters,
subscription filters, filter log events, and Live Tail", "Using filter patterns to match terms in
JSON log events"). A template with any other pattern is refused at start, loudly, rather than
matched wrongly.
"""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

logger = logging.getLogger("local.runtime")

# `{ $.a.b = "text" }` or `{ $.a = 12 }`: a property path of names, `=`, a string without wildcards or a number.
_JSON_EQUALS = re.compile(r'^\{\s*\$((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*=\s*(?:"([^"*]*)"|(-?\d+(?:\.\d+)?))\s*\}$')
# Lambda retries a failed asynchronous invocation twice (MaximumRetryAttempts' default).
ASYNC_RETRY_ATTEMPTS = 2
BATCH_EVENTS = 1000  # events per payload at most (AWS batches by its own rules, undocumented)


class UnsupportedFilterPattern(ValueError):
    pass


@dataclass(frozen=True)
class FilterPattern:
    """A JSON equality pattern: the line must be a JSON object whose property at `path` equals `value`."""

    text: str
    path: tuple[str, ...]
    value: str | float

    @classmethod
    def parse(cls, text: str) -> FilterPattern:
        found = _JSON_EQUALS.match(text.strip())
        if found is None:
            raise UnsupportedFilterPattern(
                f"subscription filter pattern {text!r} is not one the local runtime understands: only "
                '{ $.field = "value" } (or a number) is implemented'
            )
        path = tuple(found.group(1).split(".")[1:])
        value: str | float = found.group(2) if found.group(2) is not None else float(found.group(3))
        return cls(text, path, value)

    def matches(self, message: str) -> bool:
        try:
            found: Any = json.loads(message)
        except ValueError:
            return False  # not JSON: a JSON pattern matches nothing in it
        for name in self.path:
            if not isinstance(found, dict) or name not in found:
                return False
            found = found[name]
        if isinstance(self.value, str):
            return bool(found == self.value)
        return isinstance(found, int | float) and not isinstance(found, bool) and float(found) == self.value


@dataclass(frozen=True)
class SubscriptionSpec:
    """One subscription filter as the template declares it, by logical ids."""

    name: str  # the filter's name (FilterName, else its logical id)
    log_group: str  # the log group's logical id
    source_function: str  # the logical id of the function writing to that log group
    destination_function: str  # the destination function's logical id
    pattern: FilterPattern
    dead_letter_queue: str | None  # the logical id of the destination's DeadLetterConfig queue

    @classmethod
    def all_in(cls, template: Mapping[str, Any]) -> list[SubscriptionSpec]:
        resources: Mapping[str, Any] = template.get("Resources") or {}
        writers = {}  # log group logical id -> function logical id
        for logical_id, resource in resources.items():
            if resource.get("Type") == "AWS::Lambda::Function":
                group = ((resource.get("Properties") or {}).get("LoggingConfig") or {}).get("LogGroup")
                if isinstance(group, dict) and "Ref" in group:
                    writers[group["Ref"]] = logical_id
        specs = []
        for logical_id, resource in resources.items():
            if resource.get("Type") != "AWS::Logs::SubscriptionFilter":
                continue
            properties = resource.get("Properties") or {}
            group = _ref(properties.get("LogGroupName"))
            destination = _get_att_arn(properties.get("DestinationArn"))
            if group is None or destination is None or group not in writers:
                raise UnsupportedFilterPattern(
                    f"subscription filter {logical_id}: only a Lambda destination on a function's own log group "
                    "is run locally"
                )
            target = (resources[destination].get("Properties") or {}).get("DeadLetterConfig") or {}
            specs.append(
                cls(
                    name=str(properties.get("FilterName") or logical_id),
                    log_group=group,
                    source_function=writers[group],
                    destination_function=destination,
                    pattern=FilterPattern.parse(str(properties.get("FilterPattern", ""))),
                    dead_letter_queue=_get_att_arn(target.get("TargetArn")),
                )
            )
        return specs


def _ref(value: Any) -> str | None:
    return value["Ref"] if isinstance(value, dict) and isinstance(value.get("Ref"), str) else None


def _get_att_arn(value: Any) -> str | None:
    found = value.get("Fn::GetAtt") if isinstance(value, dict) else None
    return str(found[0]) if isinstance(found, list) and len(found) == 2 and found[1] == "Arn" else None


def subscription_payload(
    owner: str, log_group: str, log_stream: str, filter_name: str, events: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The event CloudWatch Logs invokes a subscription's Lambda function with."""
    data = {
        "messageType": "DATA_MESSAGE",
        "owner": owner,
        "logGroup": log_group,
        "logStream": log_stream,
        "subscriptionFilters": [filter_name],
        "logEvents": [dict(event) for event in events],
    }
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(data).encode())).decode()}}


class LogTail:
    """The lines appended to a file after the tail started (a subscription gets only the log events
    ingested after it exists)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._offset = os.path.getsize(path) if os.path.exists(path) else 0
        self._partial = b""

    def new_lines(self) -> list[str]:
        if not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as log:
            log.seek(self._offset)
            data = log.read()
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        return [line.decode(errors="replace") for line in lines if line.strip()]


class LogSubscription:
    """One filter, running: tails its source function's log file, sends the lines its pattern
    selects to `invoke` in batches, retries a failed invocation, then `dead_letter` gets the event."""

    def __init__(
        self,
        spec: SubscriptionSpec,
        log_path: str,
        owner: str,
        log_group_name: str,
        invoke: Callable[[Any], bool],
        dead_letter: Callable[[str], None] | None,
        stop: threading.Event,
        poll_seconds: float = 0.5,
        retry_seconds: float = 1.0,
    ) -> None:
        self.spec = spec
        self.tail = LogTail(log_path)
        self.owner = owner
        self.log_group_name = log_group_name
        self.log_stream = datetime.now(UTC).strftime("%Y/%m/%d/[$LATEST]") + "local"
        self._invoke = invoke
        self._dead_letter = dead_letter
        self._stop = stop
        self._poll_seconds = poll_seconds
        self._retry_seconds = retry_seconds
        self._ids = itertools.count()
        self._id_prefix = str(time.time_ns())

    def run(self) -> None:
        while not self._stop.wait(self._poll_seconds):
            try:
                self.poll_once()
            except Exception:
                logger.exception("log subscription %s failed; tailing again", self.spec.name)

    def poll_once(self) -> None:
        """Deliver the selected lines written since the last poll, stamped now, as they are ingested."""
        now_ms = time.time_ns() // 1_000_000
        events = [
            {"id": f"{self._id_prefix}{next(self._ids):012d}", "timestamp": now_ms, "message": line}
            for line in self.tail.new_lines()
            if self.spec.pattern.matches(line)
        ]
        for start in range(0, len(events), BATCH_EVENTS):
            payload = subscription_payload(
                self.owner, self.log_group_name, self.log_stream, self.spec.name, events[start : start + BATCH_EVENTS]
            )
            threading.Thread(target=self._deliver, args=(payload,), daemon=True).start()

    def _deliver(self, payload: dict[str, Any]) -> None:
        """An asynchronous invocation: the first try and two retries, then the dead-letter queue."""
        for attempt in range(ASYNC_RETRY_ATTEMPTS + 1):
            if attempt and self._stop.wait(self._retry_seconds * attempt):
                return
            if self._invoke(payload):
                return
        if self._dead_letter is None:
            logger.warning("log subscription %s: an event failed every attempt, no dead-letter queue", self.spec.name)
            return
        self._dead_letter(json.dumps(payload))
        logger.info("%-16s sent a failed event to its dead-letter queue", self.spec.name)
