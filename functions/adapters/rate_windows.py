"""The rate window item family (functions/core/rate_limits.py): its key, and the lease that counts
requests in it. Also the read of an account's own rate, from its account item."""

from __future__ import annotations

from typing import Any

from functions.adapters import keys
from functions.adapters.account_item import RATE, WINDOW, rate_of_item
from functions.adapters.attributes import from_attributes, to_attributes
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.errors import ConditionFailed
from functions.adapters.shards import account_key
from functions.adapters.table_layout import EXPIRES_AT, item_key
from functions.core.model import Quota, TenantRate, Window

USED = "used"  # the requests counted in the window
# A window item is kept this long past its end (TTL deletes it, within days, for free).
WINDOW_KEPT_SECONDS = 300
# A lease that finds fewer requests left than it wanted asks again for what is left; another
# environment may take those first, so it tries a bounded number of times.
LEASE_ATTEMPTS = 3


def window_key(account_id: str, window: Window, part: int = 0) -> dict[str, Any]:
    return item_key(keys.rate_window_pk(account_id, window.length_ms, window.index, part), keys.RATE_SORT_KEY)


class DynamoWindowStore:
    def __init__(self, table: DynamoTable) -> None:
        self._table = table

    def lease(self, account_id: str, window: Window, part: int, wanted: int) -> int:
        expires_at = window.end_ms // 1000 + WINDOW_KEPT_SECONDS
        allowance = window.part_allowance(part)
        for _ in range(LEASE_ATTEMPTS):
            wanted = min(wanted, allowance)
            if wanted <= 0:
                return 0
            try:
                self._table.call(
                    "lease rate window",
                    "update_item",
                    TableName=self._table.name,
                    Key=window_key(account_id, window, part),
                    UpdateExpression=f"ADD {USED} :wanted SET {EXPIRES_AT} = :expires",
                    # The count never passes the allowance: a lease either fits whole or changes nothing.
                    ConditionExpression=f"attribute_not_exists({USED}) OR {USED} <= :most",
                    ExpressionAttributeValues=to_attributes(
                        {":wanted": wanted, ":most": allowance - wanted, ":expires": expires_at}
                    ),
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ConditionFailed as failed:
                # An SDK retry of a lease that landed finds less room and is refused: the requests
                # it counted are then lost to the window, an undercount that only refuses early.
                wanted = allowance - int(failed.item.get(USED, allowance))
                continue
            return wanted
        return 0

    def read_rate(self, account_id: str) -> TenantRate | None:
        response = self._table.call(
            "read rate",
            "get_item",
            TableName=self._table.name,
            Key=account_key(Quota(account_id)),  # the account's own rate is on its default quota's item
            # Eventually consistent (half the read units): an admin's change is seen within a
            # second or so, and cached for longer anyway.
            ProjectionExpression=f"{RATE}, {WINDOW}",
        )
        return rate_of_item(from_attributes(response.get("Item") or {}))
