"""An UpdateItem that creates its item streams one INSERT, of the item as the update left it.

Upstream (`DynamoDBBackend.update_item`): moto creates a missing item by putting its keys alone, which
appends a stream record of its own (an INSERT whose image holds only the keys), then applies the
update and appends a second INSERT with the whole item. DynamoDB writes one stream record per item a
write changes, with the item's image after the write
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html): a stream reader never
sees the keys-only item. Here the keys-only record is dropped and the records after it keep
sequence numbers without a gap (moto finds a record by its position from the shard's first number).
"""

from __future__ import annotations

from typing import Any


def apply() -> None:
    from moto.dynamodb.models import DynamoDBBackend

    original = DynamoDBBackend.update_item

    def update_item(self: Any, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        shard = self.get_table(table_name).stream_shard
        before = len(shard.items) if shard is not None else 0
        item = original(self, table_name, key, *args, **kwargs)
        if shard is not None and len(shard.items) == before + 2 and _inserted_keys_only(shard.items[before], key):
            del shard.items[before]
            shard.items[before].record["dynamodb"]["SequenceNumber"] = str(shard.starting_sequence_number + before)
        return item

    DynamoDBBackend.update_item = update_item  # type: ignore[method-assign]


def _inserted_keys_only(record: Any, key: dict[str, Any]) -> bool:
    data = record.record
    return bool(data["eventName"] == "INSERT" and data["dynamodb"].get("NewImage", key) == key)
