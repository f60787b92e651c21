"""The table, through one DynamoDB client: the one way the stores call DynamoDB.

Every store is built on a `DynamoTable` and composes the family stores it needs (the API's is a
ShardStore, the heal's holds one, on the same table). Every call goes through `call`, `pages` or
`read_keys`, so each failure is translated once (functions/adapters/errors.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from functions.adapters.attributes import from_attributes
from functions.adapters.errors import translated
from functions.core.errors import StoreUnavailable

# BatchGetItem takes up to 100 keys, and may leave some unprocessed under load: asked again, a few times.
BATCH_GET_KEYS = 100
BATCH_GET_ATTEMPTS = 8
# BatchWriteItem takes up to 25 requests; what it leaves unprocessed (under load, or a partition at
# its limit) is not retried by botocore: asked again here, after a backoff that doubles.
BATCH_WRITE_KEYS = 25
BATCH_WRITE_ATTEMPTS = 8
BATCH_WRITE_BACKOFF_SECONDS = 0.05


class DynamoTable:
    """`client` (whose SDK retries and `watch_attempts` apply to every call) and the table's name."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name

    def call(self, operation: str, method: str, **request: Any) -> Any:
        """`client.<method>(**request)`; `operation` names it, in words, in its failure."""
        with translated(operation):
            return getattr(self.client, method)(**request)

    def pages(self, operation: str, request: dict[str, Any], method: str = "query") -> Iterator[dict[str, Any]]:
        """Each response of a Query (or a Scan, `method` "scan"), the first one included, until
        DynamoDB has no more: boto3's paginator follows LastEvaluatedKey, through the client's own
        `query` (or `scan`), so the client's hooks apply to each page as to any call."""
        with translated(operation):
            yield from self.client.get_paginator(method).paginate(**request)

    def read_keys(
        self, operation: str, wanted: Sequence[dict[str, Any]], attributes: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """The items that exist among `wanted`, decoded, strongly consistent: one BatchGetItem per
        100 keys, asked again for the keys it left unprocessed. `attributes`: only those of each."""
        found: list[dict[str, Any]] = []
        projection: dict[str, Any] = {}
        if attributes:
            names = {f"#a{index}": name for index, name in enumerate(attributes)}
            projection = {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}
        for start in range(0, len(wanted), BATCH_GET_KEYS):
            chunk = wanted[start : start + BATCH_GET_KEYS]
            for _ in range(BATCH_GET_ATTEMPTS):
                response = self.call(
                    operation,
                    "batch_get_item",
                    RequestItems={self.name: {"Keys": chunk, "ConsistentRead": True, **projection}},
                )
                found.extend(map(from_attributes, response.get("Responses", {}).get(self.name, [])))
                chunk = response.get("UnprocessedKeys", {}).get(self.name, {}).get("Keys", [])
                if not chunk:
                    break
            else:
                raise StoreUnavailable(f"{operation}: keys left unprocessed", may_have_landed=False)
        return found

    def delete_keys(
        self, operation: str, doomed: Sequence[dict[str, Any]], sleep: Callable[[float], None] = time.sleep
    ) -> None:
        """Delete the items at `doomed` (absent ones too: a delete of nothing succeeds): one
        BatchWriteItem per 25 keys, its UnprocessedItems asked again with backoff (botocore retries
        a failed call, never the items a successful one left unprocessed)."""
        for start in range(0, len(doomed), BATCH_WRITE_KEYS):
            requests = [{"DeleteRequest": {"Key": key}} for key in doomed[start : start + BATCH_WRITE_KEYS]]
            for attempt in range(BATCH_WRITE_ATTEMPTS):
                response = self.call(operation, "batch_write_item", RequestItems={self.name: requests})
                requests = response.get("UnprocessedItems", {}).get(self.name, [])
                if not requests:
                    break
                sleep(BATCH_WRITE_BACKOFF_SECONDS * 2**attempt)
            else:
                raise StoreUnavailable(f"{operation}: items left unprocessed", may_have_landed=True)
