"""Every page of a Query or a Scan, through boto3's paginator, which follows LastEvaluatedKey for us.

The paginator calls the client's own `query` (or `scan`), so the client's hooks (retries,
watch_attempts) apply to each page as to any call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def read_pages(client: Any, request: dict[str, Any], operation: str = "query") -> Iterator[dict[str, Any]]:
    """Each response of the Query (or `operation` "scan"), the first one included, until DynamoDB
    has no more."""
    yield from client.get_paginator(operation).paginate(**request)


def query_items(client: Any, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item of every page, as DynamoDB returns them (attribute values not decoded)."""
    for page in read_pages(client, request):
        yield from page.get("Items", [])
