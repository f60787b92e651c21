"""Approach 1 of the AWS blog (seed 000): an atomic counter.

One `UpdateItem ADD` per change, with the limit as its condition, and the resource in an item of
its own. Cheapest, and not exact: when a write lands and its answer is lost (a 500), the SDK's
retry applies the ADD again (an overcount); a retried delete finds the resource gone, answers
"not found" and never decrements (a slot leaked).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from benchmarks.approaches.base import COUNTER, Approach, LimitReached, failed_condition, number


class AtomicCounter(Approach):
    name = "atomic"
    title = "1 atomic counter"
    source = "blog approach 1"

    def open_account(self, account: str, limit: int) -> None:
        self.put_counter(account, limit, count={"N": "0"})

    def create(self, account: str, resource_id: str) -> None:
        try:
            self._add(account, 1, "#count < #limit")
        except ClientError as error:
            if failed_condition(error):
                raise LimitReached(account) from error
            raise
        self.dynamodb.put_item(TableName=self.table, Item=self.resource_item(account, resource_id))

    def delete(self, account: str, resource_id: str) -> bool:
        if not self.delete_resource_item(account, resource_id):
            return False
        self._add(account, -1, None)
        return True

    def count(self, account: str) -> int:
        return number(self.read(account, COUNTER), "count")

    def _add(self, account: str, change: int, condition: str | None) -> None:
        names = {"#count": "count", **({"#limit": "limit"} if condition else {})}
        arguments: dict[str, Any] = {"ConditionExpression": condition} if condition else {}
        self.dynamodb.update_item(
            TableName=self.table,
            Key=self.key(account, COUNTER),
            UpdateExpression="ADD #count :change",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={":change": {"N": str(change)}},
            **arguments,
        )
