"""The shapes of the DynamoDB requests the handler tier's code sends, and which engine received each.

`make test` runs the handler tier on moto's server but for the tests marked `engine`, which run
on DynamoDB Local, AWS's own engine (tests/conftest.py, `--emulator mixed`). Moto forgives what
DynamoDB refuses (docs/local-runtime.md lists what DynamoDB Local found), and what it refuses is
decided by a request's shape: its operation, its expressions, the types of the values they name,
what it asks back. So each session `tests.support.sessions.new_session` makes (the handlers'
wiring, and every other execution environment a test builds) notes the shape of each
DynamoDB request its clients send, filed under the engine the running test is on; the session
fails when a shape reached moto and never DynamoDB Local. A new write path is then proved against
AWS's engine by a test marked `engine`, or the run names it. The tests' own reads and setup (their
clients come from boto3's default session) are not the product's requests, and are not noted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import boto3

# The engines, as `--emulator` names them (tests/conftest.py).
MOTO = "moto"
DYNAMODB_LOCAL = "dynamodb-local"

_EXPRESSIONS = (
    "KeyConditionExpression",
    "FilterExpression",
    "ProjectionExpression",
    "ConditionExpression",
    "UpdateExpression",
)
_OPTIONS = (
    "IndexName",
    "Select",
    "ReturnValues",
    "ReturnValuesOnConditionCheckFailure",
    "ScanIndexForward",
    "ConsistentRead",
)
# A placeholder's or a shard's number changes with the data, not with what DynamoDB checks.
_NUMBERS = re.compile(r"\d+")


def _one_request(params: Mapping[str, Any]) -> list[Any]:
    shape: list[Any] = [[name, _NUMBERS.sub("N", params[name])] for name in _EXPRESSIONS if name in params]
    shape += [[name, str(params[name])] for name in _OPTIONS if name in params]
    values = params.get("ExpressionAttributeValues") or {}
    typed = sorted({(_NUMBERS.sub("N", name), next(iter(value), "")) for name, value in values.items()})
    if typed:
        shape.append(["values", [list(pair) for pair in typed]])
    return shape


def shape_of(operation: str, params: Mapping[str, Any]) -> str:
    """One line naming what DynamoDB checks of this request; a transaction's actions as a set."""
    if operation in ("TransactWriteItems", "TransactGetItems"):
        actions = {
            json.dumps([kind, _one_request(body)])
            for action in params.get("TransactItems", [])
            for kind, body in action.items()
        }
        return json.dumps([operation, sorted(actions)])
    if operation in ("BatchWriteItem", "BatchGetItem"):
        return json.dumps([operation])
    return json.dumps([operation, _one_request(params)])


class RequestShapes:
    """The shapes sent to each engine in this process, noted while `engine` names the running test's."""

    def __init__(self) -> None:
        self.sent: dict[str, set[str]] = {MOTO: set(), DYNAMODB_LOCAL: set()}
        self.engine: str | None = None  # None: not noted (no handler-tier test running)

    def watch(self, session: boto3.Session) -> None:
        session.events.register("before-parameter-build.dynamodb", self._note)

    def _note(self, params: Mapping[str, Any], model: Any, **_: Any) -> None:
        if self.engine is not None:
            self.sent[self.engine].add(shape_of(model.name, params))

    def as_json(self) -> dict[str, list[str]]:
        return {engine: sorted(shapes) for engine, shapes in self.sent.items()}

    def add(self, sent: Mapping[str, Iterable[str]]) -> None:
        for engine, shapes in sent.items():
            self.sent[engine].update(shapes)

    def only_on_moto(self) -> list[str]:
        return sorted(self.sent[MOTO] - self.sent[DYNAMODB_LOCAL])


SHAPES = RequestShapes()
