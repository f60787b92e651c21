"""moto's tables read in place, for the emulator's own layers (its partition limits, its partition
reads). Not a change to moto: it relies on moto's internals as the changes do
(`dynamodb_backends[account][region].tables`, `Table.get_item`, `Table.items` keyed by
`DynamoType`, a partition's items keyed by sort key), so it lives and is tested with them.

Called inside the emulator's one-request-at-a-time lock, so nothing moves during a read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from local.capacity.billing import Index


class MotoTables:
    def __init__(self, account_id: str) -> None:
        self._account_id = account_id

    def _table(self, region: str, name: str) -> Any:
        from moto.dynamodb.models import dynamodb_backends

        return dynamodb_backends[self._account_id][region].tables.get(name)

    def shape(self, region: str, name: str) -> tuple[tuple[str, ...], tuple[Index, ...]] | None:
        """The table's key attributes (partition key first) and its global indexes; None for a
        table that does not exist."""
        table = self._table(region, name)
        if table is None:
            return None
        keys = tuple(k for k in (table.hash_key_attr, table.range_key_attr) if k)
        indexes = tuple(
            Index.from_description({"IndexName": index.name, "KeySchema": index.schema, "Projection": index.projection})
            for index in table.global_indexes
        )
        return keys, indexes

    def item(self, region: str, name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The item at `key` (DynamoDB JSON), or None."""
        from moto.dynamodb.models.dynamo_type import DynamoType

        table = self._table(region, name)
        if table is None or table.hash_key_attr not in key:
            return None
        range_value = key.get(table.range_key_attr) if table.range_key_attr else None
        if table.range_key_attr and range_value is None:
            return None
        found = table.get_item(DynamoType(key[table.hash_key_attr]), DynamoType(range_value) if range_value else None)
        return dict(found.to_json()["Attributes"]) if found is not None else None

    def partitions(self, region: str, name: str, partition_keys: Sequence[str]) -> list[dict[str, Any]]:
        """Every item of the partitions with these (string) partition keys (DynamoDB JSON)."""
        from moto.dynamodb.models.dynamo_type import DynamoType

        table = self._table(region, name)
        if table is None:
            raise KeyError(name)
        items: list[dict[str, Any]] = []
        for partition_key in partition_keys:
            found = table.items.get(DynamoType({"S": partition_key}))
            if found is None:
                continue
            stored: Any = found.values() if table.has_range_key else [found]  # moto: sort key -> item
            items += [dict(item.to_json()["Attributes"]) for item in stored]
        return items
