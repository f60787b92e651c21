"""The eventual counter item family: an account's counter shards, read as their sum.

Shard 0 is `COUNTER` in the account's partition; a busy account's shards j >= 1 each have a
partition key of their own (functions/adapters/keys.py). The consumer writes shards >= 1 only for
resources an admission shard >= 1 admitted, so only an account whose `shard_span` is above 1 can
have them (functions/core/counting.py, counter_shard).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from functions.adapters import keys
from functions.adapters.table_layout import item_key
from functions.core.counting import EVENTUAL_COUNTER_SHARDS

COUNT = "count"


def counter_key(account_id: str, shard: int = 0) -> dict[str, Any]:
    """An eventual counter shard: 0 in the account's partition, j >= 1 on a key of its own."""
    pk = keys.account_pk(account_id) if shard == 0 else keys.counter_pk(account_id, shard)
    return item_key(pk, keys.COUNTER_SORT_KEY)


def other_counter_keys(account_id: str, span: int) -> list[dict[str, Any]]:
    """The counter shards above 0 an account can have: none until its admission shards spread."""
    return [counter_key(account_id, shard) for shard in range(1, EVENTUAL_COUNTER_SHARDS)] if span > 1 else []


def eventual_of(counters: Iterable[Mapping[str, Any]]) -> int:
    """The eventual count: the sum of the (decoded) counter shard items."""
    return sum(int(counter.get(COUNT, 0)) for counter in counters)
