"""The emulator's partition limits (opt in: `make run ARGS='--partition-limits 1/100'`).

A WSGI layer inside the emulator's one-request-at-a-time lock. For each DynamoDB request it names
the items, partition keys and index partition keys the request touches (reading the items before,
from moto's own tables: local/moto_patches/tables.py), refuses the request as DynamoDB does when a
bucket it needs is empty, and otherwise runs it and charges what DynamoDB bills
(local/capacity/limits.py has the rules and their sources). What a throttle looks like, as the
DynamoDB API reference documents it:

* a single-item request: HTTP 400 `ProvisionedThroughputExceededException` (the SDK retries it);
* `TransactWriteItems`: `TransactionCanceledException`, the throttled action's reason
  `ThrottlingError`, the others `None`;
* `BatchGetItem`: the throttled keys come back in `UnprocessedKeys`; when every key is throttled,
  `ProvisionedThroughputExceededException`.

Metered and limited: GetItem, BatchGetItem, a Query of an index, PutItem, UpdateItem, DeleteItem
and TransactWriteItems (everything the functions call). Other requests pass through unlimited.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from local.capacity.billing import (
    index_writes,
    item_size,
    plain,
    queried_partition,
    query_read_units,
    read_units,
    write_units,
)
from local.capacity.limits import READ, WRITE, PartitionLimits, index_place, item_place
from local.dynamodb_wire import dynamodb_error, get_json, give_body, json_answer, read_body, request_region
from local.moto_patches.tables import MotoTables

TARGET_PREFIX = "DynamoDB_20120810."
# GET this path on the emulator for the refusals so far, per place (the load benchmark reports them).
THROTTLES_PATH = "/_local/partition-throttles"
THROUGHPUT_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your "
    "table or index so please try again shortly."
)
Target = tuple[str, dict[str, Any], bool, dict[str, Any] | None]  # table, key, transactional, item put


class PartitionThrottling:
    def __init__(self, application: Callable[..., Iterable[bytes]], limits: PartitionLimits, tables: MotoTables):
        self._application = application
        self.limits = limits
        self._tables = tables

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == THROTTLES_PATH:
            return json_answer(start_response, dict(self.limits.throttled))
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        operation = target[len(TARGET_PREFIX) :] if target.startswith(TARGET_PREFIX) else ""
        if operation not in ("GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem", "DeleteItem") and (
            operation != "TransactWriteItems"
        ):
            return self._application(environ, start_response)
        body = read_body(environ)
        request = json.loads(body or b"{}")
        region = request_region(environ)
        if operation in ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"):
            return self._write(operation, request, region, environ, body, start_response)
        return self._read(operation, request, region, environ, body, start_response)

    # -- writes ---------------------------------------------------------------------------------

    def _write_targets(self, operation: str, request: Mapping[str, Any], region: str) -> list[Target]:
        actions = (
            [(next(iter(entry.values())), True) for entry in request.get("TransactItems", [])]
            if operation == "TransactWriteItems"
            else [(request, False)]
        )
        targets: list[Target] = []
        for action, transactional in actions:
            shape = self._tables.shape(region, action.get("TableName", ""))
            if shape is None:
                continue
            put = action.get("Item")
            key = action.get("Key") or {name: (put or {}).get(name) for name in shape[0]}
            targets.append((action["TableName"], dict(key), transactional, put))
        return targets

    def _places(
        self, region: str, table: str, key: Mapping[str, Any], items: Iterable[Mapping[str, Any] | None]
    ) -> list[str]:
        """The item and, for each of `items` in an index, its index partition key. The table's
        partition key is not limited: DynamoDB's adaptive capacity splits a hot partition by sort
        key, down to one item a partition ("Burst and adaptive capacity"); an index key whose sort
        key only grows (a timestamp) gains nothing from a split, so it is limited."""
        shape = self._tables.shape(region, table)
        assert shape is not None
        keys, indexes = shape
        partition = plain(key[keys[0]])
        places = [item_place(table, partition, plain(key[keys[1]]) if len(keys) > 1 else None)]
        for item in items:
            for index in indexes:
                index_key = index.key_of(item)
                if index_key is not None:
                    places.append(index_place(table, index.name, str(index_key[0])))
        return places

    def _write(
        self,
        operation: str,
        request: Mapping[str, Any],
        region: str,
        environ: dict[str, Any],
        body: bytes,
        start_response: Callable[..., Any],
    ) -> Iterable[bytes]:
        targets = self._write_targets(operation, request, region)
        before = [self._tables.item(region, table, key) for table, key, _, _ in targets]
        for position, ((table, key, _, put), old) in enumerate(zip(targets, before, strict=True)):
            refused = self.limits.exhausted(WRITE, self._places(region, table, key, [old, put]))
            if refused is not None:
                if operation == "TransactWriteItems":
                    return _transaction_throttled(start_response, len(targets), position)
                return dynamodb_error(start_response, "ProvisionedThroughputExceededException", THROUGHPUT_MESSAGE)
        status, answer = self._run(environ, body, start_response)
        succeeded = status.startswith("200")
        condition_failed = "ConditionalCheckFailed" in answer or "TransactionCanceled" in answer
        if not (succeeded or condition_failed):
            return [answer.encode()]
        for (table, key, transactional, _), old in zip(targets, before, strict=True):
            new = self._tables.item(region, table, key) if succeeded else old
            units = write_units(old, new, transactional=transactional)
            for place in self._places(region, table, key, []):  # the item
                self.limits.charge(WRITE, place, units)
            if succeeded:
                keys, indexes = self._tables.shape(region, table) or ((), ())
                for index in indexes:
                    for write in index_writes(index, old, new, keys):
                        self.limits.charge(WRITE, index_place(table, index.name, str(write.partition_key)), write.units)
        return [answer.encode()]

    # -- reads ----------------------------------------------------------------------------------

    def _read(
        self,
        operation: str,
        request: dict[str, Any],
        region: str,
        environ: dict[str, Any],
        body: bytes,
        start_response: Callable[..., Any],
    ) -> Iterable[bytes]:
        if operation == "GetItem":
            table, key = request.get("TableName", ""), request.get("Key", {})
            if self._tables.shape(region, table) is None:
                return self._pass_through(environ, body, start_response)
            places = self._places(region, table, key, [])
            if self.limits.exhausted(READ, places) is not None:
                return dynamodb_error(start_response, "ProvisionedThroughputExceededException", THROUGHPUT_MESSAGE)
            status, answer = self._run(environ, body, start_response)
            if status.startswith("200"):
                units = read_units(
                    item_size(json.loads(answer).get("Item")), consistent=bool(request.get("ConsistentRead"))
                )
                for place in places:
                    self.limits.charge(READ, place, units)
            return [answer.encode()]
        if operation == "BatchGetItem":
            return self._batch_get(request, region, environ, start_response)
        return self._query(request, region, environ, body, start_response)

    def _batch_get(
        self, request: dict[str, Any], region: str, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        admitted: dict[str, Any] = {}
        unprocessed: dict[str, Any] = {}
        for table, wanted in request.get("RequestItems", {}).items():
            if self._tables.shape(region, table) is None:
                admitted[table] = wanted
                continue
            for key in wanted.get("Keys", []):
                throttled = self.limits.exhausted(READ, self._places(region, table, key, [])) is not None
                chosen = unprocessed if throttled else admitted
                chosen.setdefault(table, {**wanted, "Keys": []})["Keys"].append(key)
        if not admitted:
            return dynamodb_error(start_response, "ProvisionedThroughputExceededException", THROUGHPUT_MESSAGE)
        status, answer = self._run(environ, json.dumps({**request, "RequestItems": admitted}).encode(), start_response)
        if not status.startswith("200"):
            return [answer.encode()]
        response = json.loads(answer)
        for table, items in response.get("Responses", {}).items():
            shape = self._tables.shape(region, table)
            if shape is None:
                continue
            consistent = bool(admitted.get(table, {}).get("ConsistentRead"))
            for item in items:
                key = {name: item[name] for name in shape[0]}
                for place in self._places(region, table, key, []):
                    self.limits.charge(READ, place, read_units(item_size(item), consistent=consistent))
        for table, left in unprocessed.items():
            response.setdefault("UnprocessedKeys", {}).setdefault(table, {**left, "Keys": []})["Keys"].extend(
                left["Keys"]
            )
        return [json.dumps(response).encode()]

    def _query(
        self,
        request: dict[str, Any],
        region: str,
        environ: dict[str, Any],
        body: bytes,
        start_response: Callable[..., Any],
    ) -> Iterable[bytes]:
        table = request.get("TableName", "")
        partition = queried_partition(request)
        if self._tables.shape(region, table) is None or partition is None:
            return self._pass_through(environ, body, start_response)
        index = request.get("IndexName")
        if not index:
            return self._pass_through(environ, body, start_response)  # the table's partitions: see _places
        place = index_place(table, index, partition)
        if self.limits.exhausted(READ, [place]) is not None:
            return dynamodb_error(start_response, "ProvisionedThroughputExceededException", THROUGHPUT_MESSAGE)
        status, answer = self._run(environ, body, start_response)
        if status.startswith("200"):
            self.limits.charge(READ, place, query_read_units(request, json.loads(answer)))
        return [answer.encode()]

    # -- plumbing -------------------------------------------------------------------------------

    def _pass_through(
        self, environ: dict[str, Any], body: bytes, start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        """Run a request unlimited, its body (already read here) given back to moto."""
        give_body(environ, body)
        return self._application(environ, start_response)

    def _run(self, environ: dict[str, Any], body: bytes, start_response: Callable[..., Any]) -> tuple[str, str]:
        answered: list[str] = []

        def remember(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            answered.append(status)
            fixed = [(name, value) for name, value in headers if name.lower() != "content-length"]
            return start_response(status, fixed, exc_info)

        answer = b"".join(self._pass_through(environ, body, remember)).decode()
        return answered[0], answer


def read_throttles(emulator_url: str) -> dict[str, int]:
    """The emulator's refusals so far, per item or index key (GET THROTTLES_PATH)."""
    refusals: dict[str, int] = get_json(emulator_url, THROTTLES_PATH)
    return refusals


def _transaction_throttled(start_response: Callable[..., Any], actions: int, throttled: int) -> list[bytes]:
    reasons = [
        {"Code": "ThrottlingError", "Message": THROUGHPUT_MESSAGE} if position == throttled else {"Code": "None"}
        for position in range(actions)
    ]
    codes = ", ".join(reason["Code"] for reason in reasons)
    return dynamodb_error(
        start_response,
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        CancellationReasons=reasons,
    )
