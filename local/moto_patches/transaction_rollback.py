"""A cancelled transaction is rolled back inside the table object that was there before it ran,
and only the items the transaction names are copied for it, once.

Upstream (`DynamoDBBackend.transact_write_items`): moto rolls back by putting a deep
copy of each table in the place of the live one. That copy has a stream shard of its own, so every
shard iterator already handed out keeps reading the dropped table: it reads the records of the
cancelled transaction's writes, and never another. On AWS a cancelled transaction changes nothing,
and a stream reader never notices it. Here the state
moto restored is moved back into the live table object, and the stream records the cancelled
transaction appended are removed.

moto also deep-copies every table a transaction names, once per action that names it, at a cost
that grows with the table. A transaction can change only the items it names, so only those are
copied, once a transaction; the stream's records are not copied either (a rollback drops those the
transaction appended). The emulator serves one DynamoDB request at a time, so the state kept here
between the copy and the rollback belongs to the one transaction running.
"""

from __future__ import annotations

import copy
from typing import Any


def apply() -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    original = DynamoDBBackend.transact_write_items
    touched: dict[str, set[tuple[Any, Any]]] = {}  # table name -> (hash, range) named by the transaction
    snapshots: dict[str, Any] = {}  # table name -> its copy, made once a transaction
    stream_lengths: dict[str, int] = {}  # table name -> its stream's records before the transaction

    def snapshot(table: Any, memo: dict[int, Any]) -> Any:
        if table.name in snapshots:
            return snapshots[table.name]
        clone = copy.copy(table)
        clone.items = copy.copy(table.items)  # same dict type; partitions not named are shared
        for hash_value, range_value in touched.get(table.name, set()):
            if hash_value not in table.items:
                continue
            if table.range_key_attr is None:
                clone.items[hash_value] = copy.deepcopy(table.items[hash_value], memo)
                continue
            if clone.items[hash_value] is table.items[hash_value]:
                clone.items[hash_value] = copy.copy(table.items[hash_value])
            if range_value in table.items[hash_value]:
                clone.items[hash_value][range_value] = copy.deepcopy(table.items[hash_value][range_value], memo)
        if table.stream_shard is not None:
            stream_lengths[table.name] = len(table.stream_shard.items)
        snapshots[table.name] = clone
        return clone

    def transact_write_items(self: Any, transact_items: Any) -> Any:
        touched.clear()
        snapshots.clear()
        stream_lengths.clear()
        for entry in transact_items:
            (action,) = entry.values()
            table = self.tables.get(action.get("TableName"))
            if table is None:
                continue
            key = action.get("Key") or action.get("Item") or {}
            if table.hash_key_attr not in key:
                continue
            range_value = key.get(table.range_key_attr) if table.range_key_attr else None
            touched.setdefault(table.name, set()).add(
                (DynamoType(key[table.hash_key_attr]), DynamoType(range_value) if range_value else None)
            )
        live_tables = dict(self.tables)
        Table.__deepcopy__ = snapshot  # type: ignore[attr-defined]  # only while this (serialized) request runs
        try:
            return original(self, transact_items)
        except Exception:
            for name, live in live_tables.items():
                restored = self.tables.get(name)
                if restored is None or restored is live:
                    continue
                shard = live.stream_shard
                live.__dict__.update(restored.__dict__)
                if shard is not None and name in stream_lengths:
                    del shard.items[stream_lengths[name] :]
                    shard.table = live
                live.stream_shard = shard
                self.tables[name] = live
            raise
        finally:
            del Table.__deepcopy__  # type: ignore[attr-defined]
            touched.clear()
            snapshots.clear()
            stream_lengths.clear()

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
