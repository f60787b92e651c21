"""Approaches 4 and 5 of the AWS blog (seed 000): a transaction with a client request token, and a
transaction with a marker item.

4: the counter's change alone is a transaction, made idempotent by the token the SDK sends with
   every retry of one call (DynamoDB remembers it for 10 minutes). The resource is an item of its
   own, written outside the transaction, so a delete whose answer was lost leaks as in approach 1.
5: the resource is the marker item: one transaction puts it on condition that it does not exist
   (deletes it on condition that it does) and changes the counter. Exact, and twice the cost.

Both put a transaction on the caller's path: under contention on the counter item DynamoDB cancels
it (TransactionConflict), and the caller sees the error.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from benchmarks.approaches.base import COUNTER, Approach, LimitReached, cancellation_codes, number


class TransactionWithToken(Approach):
    name = "transaction-token"
    title = "4 transaction + request token"
    source = "blog approach 4"

    def open_account(self, account: str, limit: int) -> None:
        self.put_counter(account, limit, count={"N": "0"})

    def create(self, account: str, resource_id: str) -> None:
        self._transact(account, 1, [])
        self.dynamodb.put_item(TableName=self.table, Item=self.resource_item(account, resource_id))

    def delete(self, account: str, resource_id: str) -> bool:
        if not self.delete_resource_item(account, resource_id):
            return False
        self._transact(account, -1, [])
        return True

    def count(self, account: str) -> int:
        return number(self.read(account, COUNTER), "count")

    def _transact(self, account: str, change: int, resource_actions: list[dict[str, Any]]) -> list[str]:
        """Change the counter (within the limit when adding) with `resource_actions`, in one
        transaction; returns the cancellation reasons of the resource actions, [] if it committed."""
        counter: dict[str, Any] = {
            "TableName": self.table,
            "Key": self.key(account, COUNTER),
            "UpdateExpression": "ADD #count :change",
            "ExpressionAttributeNames": {"#count": "count"},
            "ExpressionAttributeValues": {":change": {"N": str(change)}},
        }
        if change > 0:
            counter["ConditionExpression"] = "#count < #limit"
            counter["ExpressionAttributeNames"]["#limit"] = "limit"
        try:
            self.dynamodb.transact_write_items(TransactItems=[{"Update": counter}, *resource_actions])
            return []
        except ClientError as error:
            codes = cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                raise LimitReached(account) from error
            if codes and codes[0] == "None" and "ConditionalCheckFailed" in codes[1:]:
                return codes[1:]
            raise  # a conflict or a throttle: the caller sees it


class TransactionWithMarker(TransactionWithToken):
    name = "transaction-marker"
    title = "5 transaction + marker item"
    source = "blog approach 5"

    def create(self, account: str, resource_id: str) -> None:
        put = {
            "TableName": self.table,
            "Item": self.resource_item(account, resource_id),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        self._transact(account, 1, [{"Put": put}])  # cancelled by the marker: created before

    def delete(self, account: str, resource_id: str) -> bool:
        delete = {
            "TableName": self.table,
            "Key": self.key(account, f"resource#{resource_id}"),
            "ConditionExpression": "attribute_exists(pk)",
        }
        return not self._transact(account, -1, [{"Delete": delete}])
