"""Several partitions read at one instant: an extension of the embedded emulator, which AWS lacks.

A Query reads one partition, and TransactGetItems at most 100 items named by key. A check of an
invariant that spans several partitions *at an instant* needs more. The emulator applies one
DynamoDB request at a time (local/emulator.py), so a request answered inside that lock sees one
instant. `make chaos` reads each account's partitions this way (chaos/truth.py); no function
calls it.

    POST /  X-Amz-Target: LocalEmulator.ReadPartitions
    {"TableName": "...", "PartitionKeys": ["P#1", "P#2", ...]}
    -> {"Items": [every item of those partitions, in DynamoDB JSON]}
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from local.dynamodb_wire import read_body, request_region
from local.moto_patches.tables import MotoTables

TARGET = "LocalEmulator.ReadPartitions"


class PartitionReads:
    """WSGI layer answering TARGET from moto's tables; everything else goes on down."""

    def __init__(self, application: Callable[..., Iterable[bytes]], tables: MotoTables) -> None:
        self._application = application
        self._tables = tables

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("HTTP_X_AMZ_TARGET") != TARGET:
            return self._application(environ, start_response)
        request = json.loads(read_body(environ) or b"{}")
        items = self._tables.partitions(request_region(environ), request["TableName"], request["PartitionKeys"])
        body = json.dumps({"Items": items}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


def read_partitions(emulator_url: str, table_name: str, partition_keys: Sequence[str]) -> list[dict[str, Any]]:
    """Every item of those partitions, at one instant (DynamoDB JSON)."""
    host, port = emulator_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        body = json.dumps({"TableName": table_name, "PartitionKeys": list(partition_keys)})
        connection.request("POST", "/", body=body, headers={"X-Amz-Target": TARGET})
        response = connection.getresponse()
        answer = json.loads(response.read())
    finally:
        connection.close()
    if response.status != 200:
        raise RuntimeError(f"{TARGET}: {response.status} {answer}")
    items: list[dict[str, Any]] = answer["Items"]
    return items
