"""A meter of DynamoDB capacity: attaches to a boto3 client and bills every call it makes, per
table and index, per partition key and per item, under the operation the caller names.

    meter = CapacityMeter(client, reader=boto3.client("dynamodb", ...))  # the reader is not metered
    with meter.operation("create"):
        ...calls through `client`...
    meter.report()

With `trace=True` it also keeps every write it billed, one entry per item (and per index key) a
call wrote, in `meter.trace`: what a report needs to say which write of an operation costs what.

For every write it reads the items the call names before and after (with the unmetered reader,
consistently), so it sees what DynamoDB bills: item sizes, failed conditions, index entries,
key changes. That costs reads of its own: it is for benchmarks and tests, never a deployed path.
Run it with one caller at a time per item, or the before/after reads may see another's write.
The billing rules and their sources are in local/capacity/billing.py.
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from local.capacity.billing import (
    Index,
    Item,
    index_writes,
    item_size,
    plain,
    queried_partition,
    query_read_units,
    read_units,
    write_units,
)

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


@dataclass
class Usage:
    """Capacity under one operation name."""

    runs: int = 0  # times the operation was entered
    calls: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    wcu: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))  # (place, key)
    rcu: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    item_wcu: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # item -> WCU
    item_rcu: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    @property
    def total_wcu(self) -> float:
        return sum(self.wcu.values())

    @property
    def total_rcu(self) -> float:
        return sum(self.rcu.values())


@dataclass(frozen=True)
class Billed:
    """One item (or index key) a write call billed: `call` numbers the meter's calls, so a
    transaction's items share it; `run` is the operation's run the call was made in (1, 2, ...)."""

    operation: str
    run: int
    call: int
    api: str
    place: str  # "table / pk / sk" for an item, "table index NAME key K" for an index key
    units: float


@dataclass(frozen=True)
class _TableShape:
    keys: tuple[str, ...]
    indexes: tuple[Index, ...]


class CapacityMeter:
    def __init__(self, client: Any, reader: Any, trace: bool = False) -> None:
        self._reader = reader
        self.trace: list[Billed] | None = [] if trace else None
        self._calls = 0
        self._shapes: dict[str, _TableShape] = {}
        self._local = threading.local()
        self._lock = threading.Lock()
        self.usage: dict[str, Usage] = defaultdict(Usage)
        client.meta.events.register("provide-client-params.dynamodb.*", self._before)
        client.meta.events.register("after-call.dynamodb.*", self._after)

    # -- naming what is measured ---------------------------------------------------------------

    @contextlib.contextmanager
    def operation(self, name: str) -> Iterator[Usage]:
        previous = getattr(self._local, "operation", None)
        self._local.operation = name
        with self._lock:
            self.usage[name].runs += 1
        try:
            yield self.usage[name]
        finally:
            self._local.operation = previous

    @property
    def _current(self) -> str:
        return getattr(self._local, "operation", None) or "(unnamed)"

    # -- the table's shape ---------------------------------------------------------------------

    def shape(self, table: str) -> _TableShape:
        if table not in self._shapes:
            description = self._reader.describe_table(TableName=table)["Table"]
            keys = tuple(entry["AttributeName"] for entry in description["KeySchema"])
            indexes = [
                Index.from_description(index)
                for index in description.get("GlobalSecondaryIndexes", [])
                + description.get("LocalSecondaryIndexes", [])
            ]
            self._shapes[table] = _TableShape(keys, tuple(indexes))
        return self._shapes[table]

    def _key_of(self, table: str, item: Item) -> dict[str, Any]:
        return {name: item[name] for name in self.shape(table).keys}

    def _read(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self._reader.get_item(TableName=table, Key=dict(key), ConsistentRead=True).get("Item")
        return dict(found) if found is not None else None

    # -- hooks ---------------------------------------------------------------------------------

    def _targets(self, name: str, params: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        """(table, key, transactional) of every item a write names."""
        if name == "TransactWriteItems":
            targets = []
            for entry in params["TransactItems"]:
                ((_, action),) = entry.items()
                key = action.get("Key") or self._key_of(action["TableName"], action["Item"])
                targets.append((action["TableName"], dict(key), True))
            return targets
        if name == "BatchWriteItem":
            return [
                (
                    table,
                    dict(request["DeleteRequest"]["Key"])
                    if "DeleteRequest" in request
                    else self._key_of(table, request["PutRequest"]["Item"]),
                    False,
                )
                for table, requests in params["RequestItems"].items()
                for request in requests
            ]
        key = params.get("Key") or self._key_of(params["TableName"], params["Item"])
        return [(params["TableName"], dict(key), False)]

    def _before(self, params: dict[str, Any], context: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in WRITES:
            context["capacity_before"] = [
                (table, key, transactional, self._read(table, key))
                for table, key, transactional in self._targets(model.name, params)
            ]
        context["capacity_params"] = params

    def _after(self, context: dict[str, Any], model: Any, parsed: Mapping[str, Any], **_: Any) -> None:
        usage = self.usage[self._current]
        params = context.get("capacity_params", {})
        failed = "Error" in parsed
        with self._lock:
            usage.calls[model.name] += 1
            self._calls += 1
            if model.name in WRITES:
                self._bill_writes(usage, context.get("capacity_before", []), failed, model.name, parsed)
            else:
                self._bill_reads(usage, model.name, params, parsed)

    def _bill_writes(
        self, usage: Usage, before: list[tuple[str, dict[str, Any], bool, Any]], failed: bool, name: str, parsed: Any
    ) -> None:
        unprocessed = parsed.get("UnprocessedItems", {}) if name == "BatchWriteItem" else {}
        for table, key, transactional, old in before:
            if unprocessed.get(table):
                continue  # conservative: a batch with unprocessed items is billed for the others only
            new = old if failed else self._read(table, key)
            units = write_units(old, new, transactional=transactional)
            item = self._add(usage.wcu, usage.item_wcu, table, key, units)
            self._traced(usage, name, item, units)
            if failed:
                continue  # nothing changed: no index is written
            shape = self.shape(table)
            for index in shape.indexes:
                for write in index_writes(index, old, new, shape.keys):
                    place = (f"{table} index {write.index}", _show(write.partition_key))
                    usage.wcu[place] += write.units
                    self._traced(usage, name, " key ".join(place), write.units)

    def _traced(self, usage: Usage, api: str, place: str, units: float) -> None:
        if self.trace is not None:
            self.trace.append(Billed(self._current, usage.runs, self._calls, api, place, units))

    def _bill_reads(self, usage: Usage, name: str, params: Mapping[str, Any], parsed: Mapping[str, Any]) -> None:
        if name == "GetItem":
            item = parsed.get("Item")
            units = read_units(item_size(item), consistent=bool(params.get("ConsistentRead")))
            self._add(usage.rcu, usage.item_rcu, params["TableName"], dict(params["Key"]), units)
        elif name == "BatchGetItem":
            for table, request in params["RequestItems"].items():
                found = {
                    tuple(sorted(_show(item[k]) for k in self.shape(table).keys)): item
                    for item in parsed.get("Responses", {}).get(table, [])
                }
                for key in request["Keys"]:
                    item = found.get(tuple(sorted(_show(v) for v in key.values())))
                    units = read_units(item_size(item), consistent=bool(request.get("ConsistentRead")))
                    self._add(usage.rcu, usage.item_rcu, table, dict(key), units)
        elif name == "TransactGetItems":
            for entry, response in zip(params["TransactItems"], parsed.get("Responses", []), strict=False):
                get = entry["Get"]
                units = read_units(item_size(response.get("Item")), consistent=True, transactional=True)
                self._add(usage.rcu, usage.item_rcu, get["TableName"], dict(get["Key"]), units)
        elif name in ("Query", "Scan"):
            table = params["TableName"]
            place = f"{table} index {params['IndexName']}" if "IndexName" in params else table
            partition = queried_partition(params) or "(every partition)"  # a Scan reads them all
            usage.rcu[(place, partition)] += query_read_units(params, parsed)

    def _add(
        self,
        by_key: dict[tuple[str, str], float],
        by_item: dict[str, float],
        table: str,
        key: dict[str, Any],
        units: float,
    ) -> str:
        """Bill `units` to the item's partition key and to the item; returns the item's name."""
        shape = self.shape(table)
        partition = _show(key[shape.keys[0]])
        by_key[(table, partition)] += units
        item = " / ".join([table, *(_show(key[name]) for name in shape.keys)])
        by_item[item] += units
        return item


def _show(value: Any) -> str:
    return plain(value) if isinstance(value, Mapping) else str(value)
