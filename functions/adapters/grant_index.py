"""The expiring grants' index (docs/plans.md, "Expiring grants"): one entry per grant, written in
the transaction of the PUT that gives it, in the partition of the UTC hour the grant ends
(keys.GRANTS_PREFIX), sorted by its end. The sweeper finds the grants that ended with one Query per
hour of its look-back (6 hours: 7 Queries, each reading only the entries not handled yet, as each
is removed once handled), never a Scan.

An entry only says where to look: the quota's account item decides (its grant's end, the PUT that
gave it). A grant replaced or removed early leaves its entry, which the sweeper finds, checks and
removes; TTL removes any left a week after the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from functions.adapters import keys
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.table_layout import EXPIRES_AT, ITEM_TYPE, PARTITION_KEY, SORT_KEY, item_key
from functions.core.grants import GrantEntry
from functions.core.model import Quota

GRANT_ENTRY = "grant_entry"  # the entry's item type
ENTRY_ACCOUNT = "account_id"
ENTRY_TYPE = "resource_type"
ENTRY_ENDS = "ends_ms"
# An entry outlives its grant's end by this much before TTL removes it (the sweeper removes it
# first, unless it did not run for a week).
ENTRY_RETENTION = timedelta(days=7)
HOUR = timedelta(hours=1)


def bucket_of(ends_ms: int) -> str:
    """The partition key of the grants ending in that UTC hour."""
    return keys.GRANTS_PREFIX + datetime.fromtimestamp(ends_ms / 1000, UTC).strftime("%Y-%m-%dT%H")


def entry_key(quota: Quota, ends_ms: int) -> dict[str, Any]:
    return item_key(bucket_of(ends_ms), f"{ends_ms:015d}#{quota.account_id}#{quota.resource_type}")


def entry_put(table: str, quota: Quota, ends_ms: int) -> dict[str, Any]:
    """The entry of a grant of `quota` ending at `ends_ms`, a Put for the PUT's transaction (the
    same grant given again writes the same entry)."""
    values = {
        **{name: value["S"] for name, value in entry_key(quota, ends_ms).items()},
        ITEM_TYPE: GRANT_ENTRY,
        ENTRY_ACCOUNT: quota.account_id,
        ENTRY_TYPE: quota.resource_type,
        ENTRY_ENDS: ends_ms,
        EXPIRES_AT: (ends_ms // 1000) + int(ENTRY_RETENTION.total_seconds()),
    }
    return {"Put": {"TableName": table, "Item": to_attributes(values)}}


@dataclass
class DynamoGrantIndex:
    table: DynamoTable

    def grants_ended(self, since_ms: int, until_ms: int) -> Iterator[GrantEntry]:
        """The entries of grants that end after `since_ms` and no later than `until_ms`, by end:
        one Query per UTC hour between them."""
        hour = datetime.fromtimestamp(since_ms / 1000, UTC).replace(minute=0, second=0, microsecond=0)
        last = datetime.fromtimestamp(until_ms / 1000, UTC)
        while hour <= last:
            request = {
                "TableName": self.table.name,
                "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :low AND :high",
                "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
                "ExpressionAttributeValues": to_attributes(
                    {
                        ":pk": bucket_of(int(hour.timestamp() * 1000)),
                        ":low": f"{max(since_ms, 0):015d}",
                        ":high": f"{until_ms:015d}~",  # '~' sorts after '#' and every name
                    }
                ),
                "ConsistentRead": True,
            }
            for page in self.table.pages("read grants ended", request):
                for item in page.get("Items", []):
                    plain = from_attributes(item)
                    quota = Quota(str(plain[ENTRY_ACCOUNT]), str(plain[ENTRY_TYPE]))
                    yield GrantEntry(quota, int(plain[ENTRY_ENDS]))
            hour += HOUR

    def forget(self, entry: GrantEntry) -> None:
        """Remove a handled entry (idempotent)."""
        self.table.call(
            "forget grant", "delete_item", TableName=self.table.name, Key=entry_key(entry.quota, entry.ends_ms)
        )
