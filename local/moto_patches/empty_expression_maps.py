"""Empty expression maps refused as DynamoDB refuses them.

DynamoDB answers a request whose `ExpressionAttributeNames` or `ExpressionAttributeValues` is
present but empty with a 400 ValidationException ("ExpressionAttributeNames must not be empty"),
on its own and inside each action of a transaction: AWS's own engine, DynamoDB Local, answers so
(`make test-dynamodb-local`; docs/local-runtime.md). Upstream, moto applies a request with
an empty `ExpressionAttributeNames` (it refuses an empty `ExpressionAttributeValues` itself).

A WSGI layer in front of moto, so every tier and `make run` meet the rule, before anything is
billed against the emulator's partition limits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from local.dynamodb_wire import dynamodb_error, read_body

TARGET_PREFIX = "DynamoDB_20120810."
MAPS = ("ExpressionAttributeNames", "ExpressionAttributeValues")
TRANSACTION_ACTIONS = ("Put", "Update", "Delete", "ConditionCheck")


def empty_map(request: Mapping[str, Any]) -> str | None:
    """The name of the first expression map that is present and empty, in the request or any of
    its transaction's actions; None when there is none."""
    for part in _parts(request):
        for name in MAPS:
            if name in part and not part[name]:
                return name
    return None


def _parts(request: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield request
    for item in request.get("TransactItems") or []:
        for action in TRANSACTION_ACTIONS:
            if isinstance(item, Mapping) and isinstance(item.get(action), Mapping):
                yield item[action]


class EmptyExpressionMaps:
    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self._application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith(TARGET_PREFIX):
            return self._application(environ, start_response)
        try:
            request = json.loads(read_body(environ) or b"{}")
        except ValueError:
            return self._application(environ, start_response)  # moto answers a malformed body
        name = empty_map(request) if isinstance(request, Mapping) else None
        if name is not None:
            return dynamodb_error(start_response, "ValidationException", f"{name} must not be empty")
        return self._application(environ, start_response)
