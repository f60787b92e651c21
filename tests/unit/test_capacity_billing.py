"""DynamoDB's billing rules on hand-counted items (local/capacity/billing.py cites each rule)."""

from __future__ import annotations

from local.capacity.billing import Index, index_writes, item_size, number_size, read_units, write_units

KEYS = ("pk", "sk")
ACTIVITY = Index("activity", "bucket", "at", "INCLUDE", frozenset({"limit"}))


def item_of(size_of_data: int, **extra: dict[str, str]) -> dict[str, dict[str, str]]:
    """An item of 10 + size_of_data bytes: "pk" "a" (3), "sk" "b" (3), "data" (4) and its characters."""
    return {"pk": {"S": "a"}, "sk": {"S": "b"}, "data": {"S": "x" * size_of_data}, **extra}


def test_sizes_follow_dynamodbs_rules() -> None:
    assert item_size({"pk": {"S": "héllo"}}) == 2 + 6  # names and strings in UTF-8 bytes
    assert number_size("12345") == 4  # 3 bytes for 5 significant digits, plus 1
    assert number_size("-0.0012") == 2  # leading and trailing zeros are not significant
    assert number_size("1000000") == 2
    assert item_size({"m": {"M": {"a": {"BOOL": True}}}}) == 1 + 3 + (1 + 1 + 1)
    assert item_size({"b": {"B": b"\x00\x01\x02"}}) == 1 + 3


def test_a_put_of_two_and_a_half_kilobytes_is_three_write_units() -> None:
    assert write_units(None, item_of(2560 - 10)) == 3


def test_a_write_is_billed_on_the_larger_of_the_item_before_and_after() -> None:
    assert write_units(item_of(3000), item_of(10)) == 3  # shrinking a 3 KB item costs 3
    assert write_units(item_of(1014), None) == 1  # exactly 1 KB
    assert write_units(item_of(1015), None) == 2


def test_a_transaction_of_two_small_items_is_four_write_units() -> None:
    assert write_units(None, item_of(10), transactional=True) + write_units(item_of(5), None, transactional=True) == 4


def test_a_failed_conditional_write_is_billed_on_the_existing_item() -> None:
    existing = item_of(1500)
    assert write_units(existing, existing) == 2  # condition failed: nothing changed, still billed
    assert write_units(None, None) == 1  # failed on an absent item: the minimum


def test_reads_are_four_kilobyte_units_halved_when_eventually_consistent() -> None:
    assert read_units(4096, consistent=True) == 1
    assert read_units(4097, consistent=True) == 2
    assert read_units(4097, consistent=False) == 1
    assert read_units(0, consistent=False) == 0.5  # an absent item still costs the minimum
    assert read_units(100, consistent=True, transactional=True) == 2


def test_an_index_key_change_is_a_delete_and_a_put() -> None:
    before = item_of(10, bucket={"S": "7"}, at={"S": "t1"})
    after = item_of(10, bucket={"S": "7"}, at={"S": "t2"})
    writes = index_writes(ACTIVITY, before, after, KEYS)
    assert [(w.partition_key, w.units) for w in writes] == [("7", 1), ("7", 1)]


def test_an_index_is_written_once_on_entry_and_once_on_exit_and_never_when_untouched() -> None:
    outside = item_of(10)
    inside = item_of(10, bucket={"S": "7"}, at={"S": "t1"})
    assert len(index_writes(ACTIVITY, outside, inside, KEYS)) == 1
    assert len(index_writes(ACTIVITY, inside, outside, KEYS)) == 1
    assert index_writes(ACTIVITY, outside, item_of(20), KEYS) == []  # a sparse index never sees it
    # a change to an attribute the index does not project writes nothing to it
    assert index_writes(ACTIVITY, inside, {**inside, "data": {"S": "changed"}}, KEYS) == []
    # a change to a projected attribute rewrites the index entry once
    assert len(index_writes(ACTIVITY, inside, {**inside, "limit": {"N": "5"}}, KEYS)) == 1
