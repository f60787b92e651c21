"""How DynamoDB bills capacity, as pure functions of items (DynamoDB JSON) before and after a call.

Sources (DynamoDB developer guide): "Item sizes and formats" (a name's UTF-8 bytes plus its value:
strings in UTF-8 bytes, numbers about 1 byte per two significant digits plus 1, binary in bytes,
null and boolean 1 byte, a list or map 3 bytes plus its elements and 1 byte each); "Read/write
capacity mode" (a write unit per 1 KB, of the larger of the item before and after; a strongly
consistent read unit per 4 KB, an eventually consistent one half that; transactional requests twice
either); "Condition expressions" (a write whose condition fails still consumes write capacity, the
size of the existing item, at least 1); "Provisioned throughput considerations for global secondary
indexes" (a table write updates an index when the item enters it, leaves it, or changes a projected
attribute; a change of the index's key attributes is a delete and a put: two index writes).

For a cancelled transaction AWS documents nothing about capacity. The meter assumes every action is
billed as a transactional write whose condition failed: twice the item's size before, at least 2
per action, and no index writes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

Item = Mapping[str, Mapping[str, Any]]  # DynamoDB JSON: name -> {"S": "..."}

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096


def number_size(text: str) -> int:
    """A number's size: 1 byte per two significant digits, plus 1 (DynamoDB's rule, rounded up)."""
    digits = str(abs(Decimal(text)).normalize()).replace(".", "")
    if "E" in digits:  # normalize() writes large numbers in exponent form
        digits = digits.split("E")[0]
    significant = digits.strip("0") or "0"
    return math.ceil(len(significant) / 2) + 1


def value_size(value: Mapping[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        return number_size(inner)
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(member.encode()) for member in inner)
    if kind == "NS":
        return sum(number_size(member) for member in inner)
    if kind == "BS":
        return sum(len(member) for member in inner)
    if kind == "M":
        return 3 + sum(len(name.encode()) + value_size(member) + 1 for name, member in inner.items())
    if kind == "L":
        return 3 + sum(value_size(member) + 1 for member in inner)
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def item_size(item: Item | None) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in (item or {}).items())


def write_units(before: Item | None, after: Item | None, *, transactional: bool = False) -> int:
    """A write: 1 unit per KB of the larger of the item before and after, at least 1; twice in a
    transaction. A failed condition passes the same item as before and after."""
    units = max(1, math.ceil(max(item_size(before), item_size(after)) / WRITE_UNIT_BYTES))
    return 2 * units if transactional else units


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    """A read of `size` bytes (an absent item reads as 0 bytes and still costs the minimum)."""
    units = float(max(1, math.ceil(size / READ_UNIT_BYTES)))
    if transactional:
        return 2 * units
    return units if consistent else units / 2


def query_read_units(request: Mapping[str, Any], response: Mapping[str, Any]) -> float:
    """A Query is billed on the items it read before any filter, one total rounded up to 4 KB.
    Only what it returned can be sized: their size is scaled by ScannedCount / Count."""
    items = response.get("Items", [])
    count = response.get("Count", len(items))
    returned = sum(item_size(item) for item in items)
    size = returned * response.get("ScannedCount", count) / count if count else 0
    return read_units(int(size), consistent=bool(request.get("ConsistentRead")))


def queried_partition(request: Mapping[str, Any]) -> str | None:
    """The partition key value a Query's key condition names (`#pk = :value`), if any."""
    condition = request.get("KeyConditionExpression", "")
    for placeholder, value in request.get("ExpressionAttributeValues", {}).items():
        if f"= {placeholder}" in condition or f"={placeholder}" in condition:
            return plain(value)
    return None


def plain(value: Mapping[str, Any]) -> str:
    """A key attribute's value as text: {"S": "a"} -> "a"."""
    ((_, inner),) = value.items()
    return str(inner)


@dataclass(frozen=True)
class Index:
    """A secondary index as billing sees it: its key attributes and what it projects."""

    name: str
    hash_key: str
    range_key: str | None
    projection: str  # ALL, KEYS_ONLY or INCLUDE
    included: frozenset[str] = frozenset()

    @classmethod
    def from_description(cls, description: Mapping[str, Any]) -> Index:
        """From an index as DescribeTable describes it (IndexName, KeySchema, Projection)."""
        schema = {entry["KeyType"]: entry["AttributeName"] for entry in description["KeySchema"]}
        projection = description.get("Projection") or {}
        return cls(
            description["IndexName"],
            schema["HASH"],
            schema.get("RANGE"),
            projection.get("ProjectionType", "ALL"),
            frozenset(projection.get("NonKeyAttributes", [])),
        )

    def key_of(self, item: Item | None) -> tuple[Any, ...] | None:
        """The item's index key, or None when the item is not in the (sparse) index."""
        if not item or self.hash_key not in item:
            return None
        if self.range_key is not None and self.range_key not in item:
            return None
        return (_plain(item[self.hash_key]), _plain(item[self.range_key]) if self.range_key else None)

    def projected(self, item: Item, table_keys: tuple[str, ...]) -> dict[str, Any]:
        if self.projection == "ALL":
            return dict(item)
        kept = {*table_keys, self.hash_key, *([self.range_key] if self.range_key else []), *self.included}
        return {name: value for name, value in item.items() if name in kept}


@dataclass(frozen=True)
class IndexWrite:
    index: str
    partition_key: Any  # the index's hash key value: the index partition that takes the write
    units: int


def index_writes(
    index: Index, before: Item | None, after: Item | None, table_keys: tuple[str, ...]
) -> list[IndexWrite]:
    """What a table write costs one index: nothing if the item stays out of it or its projection
    is unchanged, 1 write to put or delete, 2 (a delete and a put) when its index key changes."""
    old_key, new_key = index.key_of(before), index.key_of(after)
    writes: list[IndexWrite] = []
    if old_key is not None and new_key != old_key:
        writes.append(IndexWrite(index.name, old_key[0], write_units(index.projected(before or {}, table_keys), None)))
    if new_key is not None:
        projected_after = index.projected(after or {}, table_keys)
        unchanged = new_key == old_key and index.projected(before or {}, table_keys) == projected_after
        if not unchanged:
            writes.append(IndexWrite(index.name, new_key[0], write_units(projected_after, None)))
    return writes


def _plain(value: Mapping[str, Any]) -> Any:
    ((_, inner),) = value.items()
    return inner if not isinstance(inner, list) else tuple(inner)
