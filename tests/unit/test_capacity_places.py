"""Where the emulator's partition limits count a refusal (local/capacity/limits.py), read back."""

from __future__ import annotations

from local.capacity.limits import READ, WRITE, index_place, item_of_place, item_place


def test_an_items_place_gives_back_its_table_and_keys_and_an_index_keys_place_none() -> None:
    assert item_of_place(f"{WRITE} {item_place('T', 'SHARD#a#1', 'SHARD')}") == ("T", "SHARD#a#1", "SHARD")
    assert item_of_place(f"{READ} {item_place('T', 'K', None)}") == ("T", "K", None)
    assert item_of_place(item_place("T", "a", "b")) == ("T", "a", "b")
    assert item_of_place(f"{WRITE} {index_place('T', 'pending', 'PENDING#1')}") is None
