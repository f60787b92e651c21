"""DynamoDB's item calls are answered with json.dumps instead of moto's shape-driven serializer.

Upstream (`DynamoHandler.serialized`): every answer goes through the generic
serializer, which walks the result attribute by attribute against the botocore model: about 10% of
the emulator's CPU under `make bench-load` (py-spy), mostly for items an UpdateItem returns whole.
The item calls' results are DynamoDB JSON already (typed values, numbers as strings). Errors (a
failed condition, a cancelled transaction) still go through moto's serializer.
"""

from __future__ import annotations

import json
from typing import Any

from local.moto_patches.json_protocol import as_the_json_protocol_writes_it

PLAIN_JSON_ANSWERS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "TransactWriteItems",
        "TransactGetItems",
    }
)


def apply() -> None:
    from moto.core.responses import ActionResult
    from moto.dynamodb.responses import DynamoHandler

    serialized = DynamoHandler.serialized

    def plain(self: Any, action_result: ActionResult) -> Any:
        if isinstance(action_result.result, Exception) or self._get_action() not in PLAIN_JSON_ANSWERS:
            return serialized(self, action_result)
        body = json.dumps(action_result.result, default=as_the_json_protocol_writes_it)
        return 200, {**self.response_headers, "Content-Type": "application/x-amz-json-1.0"}, body

    DynamoHandler.serialized = plain  # type: ignore[method-assign]
