"""A Query sorts the items its key matches, not the whole table.

Upstream (`Table.query`): moto gathers a query's candidates from `Table.all_items()`, which sorts
every item of the table (by its keys, comparing moto's attribute objects), then keeps those whose
partition key (or, on an index, whose index key) matches. Every query, even of one partition,
costs a sort of the table, which grows as a local system serves: with 300 accounts of 3 resources
each, 43 ms of the emulator's CPU per query, and an idle `make run` whose sweeper (every 5 s, as
the integration tier runs it) queries the activity index's 128 buckets took 0.6 of a core. The
tuned emulator hands the query only the items its key can match, in the order `all_items()`
gives them: a table's partition from moto's own dictionary of partitions, an index's by one pass
over the items with moto's own test of the index key (4 ms a query there; the idle system 0.2 of
a core). The rest of the query (ranges, filters, order, limits, pages, projections) is moto's.
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar
from typing import Any

# The candidates of the query in progress: what `all_items()` answers while moto's query runs.
_CANDIDATES: ContextVar[list[Any] | None] = ContextVar("query candidates", default=None)


def _table_order(item: Any) -> Any:
    """`Table.all_items()`'s order (moto 5.2.5)."""
    return (item.hash_key, item.range_key) if item.range_key else item.hash_key


def _stored(table: Any) -> list[Any]:
    """Every item of the table, unsorted (as `all_items()` collects them)."""
    if table.range_key_attr:
        return [item for partition in table.items.values() for item in partition.values()]
    return list(table.items.values())


def _index_key_matches(item: Any, conditions: list[tuple[str, Any]]) -> bool:
    """moto's own test of an item against an index query's key conditions (`Table.query`)."""
    for name, expected in conditions:
        value = item.attrs.get(name)
        if not value or value != expected:
            return False
    return True


def candidates(table: Any, hash_key: Any, index_name: str | None, hash_key_conditions: Any) -> list[Any] | None:
    """The items a query can match, in `all_items()`'s order; None when it cannot be told (moto
    then gathers them itself)."""
    from moto.dynamodb.models.dynamo_type import Item

    if index_name is None:
        if hash_key is None:
            return None
        partition = table.items.get(hash_key)  # .get: the dictionary is a defaultdict
        if partition is None:
            return []
        found = list(partition.values()) if table.range_key_attr else [partition]
    else:
        conditions = list(hash_key_conditions or [])
        if not conditions:
            return None
        found = [item for item in _stored(table) if isinstance(item, Item) and _index_key_matches(item, conditions)]
    return sorted(found, key=_table_order)


def apply() -> None:
    from moto.dynamodb.models.table import Table

    every_item = Table.all_items
    query = Table.query
    signature = inspect.signature(query)

    def all_items(self: Any) -> Any:
        narrowed = _CANDIDATES.get()
        return every_item(self) if narrowed is None else narrowed

    def query_of_its_matches(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs).arguments
        found = candidates(self, bound["hash_key"], bound.get("index_name"), bound.get("hash_key_conditions"))
        token = _CANDIDATES.set(found)
        try:
            return query(self, *args, **kwargs)
        finally:
            _CANDIDATES.reset(token)

    Table.all_items = all_items  # type: ignore[method-assign]
    Table.query = query_of_its_matches  # type: ignore[method-assign]
