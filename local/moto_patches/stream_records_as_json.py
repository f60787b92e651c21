"""GetRecords is written with json.dumps instead of moto's shape-driven serializer.

Upstream (`DynamoDBStreamsHandler.get_records` through `moto.core.serialize`): the
generic serializer walks every attribute of every stream image against the botocore model, 110 ms
for a batch of 80 KB (measured), the largest share of the emulator's time under load. Stream records
are DynamoDB JSON already; the values json.dumps cannot write (`ApproximateCreationDateTime`,
binary attributes) are written as the JSON protocol writes them.
"""

from __future__ import annotations

import json
from typing import Any

from local.moto_patches.json_protocol import as_the_json_protocol_writes_it


def apply() -> None:
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    def get_records(self: Any) -> str:
        result = self.backend.get_records(self._get_param("ShardIterator"), self._get_param("Limit") or 1000)
        return json.dumps(result, default=as_the_json_protocol_writes_it)

    DynamoDBStreamsHandler.get_records = get_records  # type: ignore[method-assign,assignment]
