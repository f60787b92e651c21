"""Faults the local runtime injects inside its sandboxes, below the handler's code.

A rule answers matching AWS calls with an AWS error instead of sending them (nothing lands),
at botocore's `before-send`, so the SDK's own retries see it as a real answer:

    {"functions": ["worker"], "operation": "TransactWriteItems",
     "contains": "poison", "answer": "TransactionConflict"}

`functions` names functions by their short names (local/functions.py `DeployedFunction.short_name`;
empty = all), `contains` is matched against the call's parameters as JSON, `answer` is one of
ANSWERS.

`contains` may be a list: every one of its strings must appear.

A rule with `delay_seconds` instead of `answer` holds the matching call back that long, then sends
it: an invocation that runs on after its caller gave up. With `once_file`, only the first matching
call of any sandbox is held (the file marks it taken), so the caller's retry runs at once. With
`release_file`, the call is sent as soon as that file exists (`delay_seconds` is then the longest
hold): a test releases the late call when it has done what must come first, whatever the machine's
speed, rather than hoping a fixed delay was long enough.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse

from local.dynamodb_wire import error_body

_TYPE = "com.amazonaws.dynamodb.v20120810#"
# Request-context flags of fixed rules start with this, so random chaos faults can stand aside.
FAULT_FLAG_PREFIX = "fault_rule_"

ANSWERS: dict[str, tuple[int, dict[str, Any]]] = {
    "TransactionConflict": (
        400,
        {
            "__type": f"{_TYPE}TransactionCanceledException",
            "message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
            "[TransactionConflict, None]",
            "CancellationReasons": [
                {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"},
                {"Code": "None"},
            ],
        },
    ),
    "ThrottlingException": (400, {"__type": f"{_TYPE}ThrottlingException", "message": "Rate exceeded"}),
    "InternalServerError": (500, {"__type": f"{_TYPE}InternalServerError", "message": "Internal server error"}),
    "TrimmedDataAccessException": (
        400,
        {"__type": "com.amazonaws.dynamodb.v20120810#TrimmedDataAccessException", "message": "records trimmed"},
    ),
}


def cancelled_body(*codes: str) -> dict[str, Any]:
    """DynamoDB's TransactionCanceledException body, one reason per action, in action order."""
    return error_body(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{', '.join(codes)}]",
        CancellationReasons=[{"Code": code} if code == "None" else {"Code": code, "Message": code} for code in codes],
    )


def aws_response(request: Any, status: int, body: Mapping[str, Any]) -> AWSResponse:
    """An answer on the wire, as the service would send it, for `request`."""
    headers = {"x-amzn-RequestId": "injected-fault", "Content-Type": "application/x-amz-json-1.0"}
    return AWSResponse(request.url, status, headers, _Body(json.dumps(body).encode()))


class _Body:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def install(rules: Sequence[Mapping[str, Any]], function: str) -> None:
    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    events = boto3.DEFAULT_SESSION.events
    for rule in rules:
        if rule.get("functions") and function not in rule["functions"]:
            continue
        if "delay_seconds" in rule:
            _register_delay(events, rule)
            continue
        if rule["answer"] not in ANSWERS:
            raise ValueError(f"unknown fault answer {rule['answer']!r}; known: {sorted(ANSWERS)}")
        _register(events, rule)


def _matcher(rule: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    contains = rule.get("contains", "")
    needles = [contains] if isinstance(contains, str) else list(contains)
    return lambda params: all(needle in json.dumps(params, default=str) for needle in needles)


def _register_delay(events: Any, rule: Mapping[str, Any]) -> None:
    def hold(request: Any) -> None:
        if not _first_taker(rule.get("once_file")):
            return
        release = rule.get("release_file")
        deadline = time.monotonic() + float(rule["delay_seconds"])
        while time.monotonic() < deadline and not (release and os.path.exists(release)):
            time.sleep(0.05 if release else max(0.0, deadline - time.monotonic()))

    on_matching_send(events, rule.get("service", "dynamodb"), rule["operation"], _matcher(rule), hold)


def _first_taker(once_file: str | None) -> bool:
    if once_file is None:
        return True
    try:
        os.close(os.open(once_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def _register(events: Any, rule: Mapping[str, Any]) -> None:
    status, body = ANSWERS[rule["answer"]]
    answer_on_the_wire(
        events,
        rule.get("service", "dynamodb"),
        rule["operation"],
        _matcher(rule),
        status,
        body,
    )


def answer_on_the_wire(
    events: Any,
    service: str,
    operation: str,
    matches: Callable[[Mapping[str, Any]], bool],
    status: int,
    body: Mapping[str, Any],
    times: int | None = None,
) -> list[int]:
    """Answer matching calls with `status` and the JSON `body`, at most `times` times (None: always).

    Returns a one-item list counting the answers given."""
    given = [0]
    lock = threading.Lock()

    def answer(request: Any) -> AWSResponse | None:
        with lock:
            if times is not None and given[0] >= times:
                return None
            given[0] += 1
        return aws_response(request, status, body)

    on_matching_send(events, service, operation, matches, answer)
    return given


def on_matching_send(
    events: Any,
    service: str,
    operation: str,
    matches: Callable[[Mapping[str, Any]], bool],
    act: Callable[[Any], AWSResponse | None],
) -> None:
    """Run `act(request)` at botocore's `before-send`, below the SDK's retry loop, for each call
    whose API parameters `matches`. A response `act` returns is the call's answer, and nothing is
    sent; None lets the call go on."""
    flag = f"{FAULT_FLAG_PREFIX}{uuid.uuid4().hex}"  # one per registration: several can watch one operation

    def remember(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[flag] = matches(params)

    def send(request: Any, **_: Any) -> AWSResponse | None:
        return act(request) if request.context.get(flag) else None

    events.register(f"provide-client-params.{service}.{operation}", remember)
    events.register(f"before-send.{service}.{operation}", send)
