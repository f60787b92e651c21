"""Approaches 6 and 7 of the AWS blog (seed 000): counting with an item collection, and with a set.

6: every change is an item of its own in the account's collection, keyed by the change (so a
   retry overwrites itself), and the count is their sum, read with a Query. Exact, and writes
   scale; the count costs a read of the whole history, and a limit is checked then acted on, so
   concurrent creates can pass it together (the blog: a threshold cannot be enforced reliably).
7: the counter item holds the set of live resource ids; a create adds its id on condition that
   the set is below the limit and lacks it, a delete removes it on condition that it holds it. A
   failed condition is told apart by reading the set. Exact; every write is billed for the whole
   set, and the item's 400 KB bounds the limit.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from benchmarks.approaches.base import COUNTER, Approach, LimitReached, failed_condition, number


class ItemCollection(Approach):
    name = "item-collection"
    title = "6 item collection"
    source = "blog approach 6"

    def open_account(self, account: str, limit: int) -> None:
        self.put_counter(account, limit)

    def create(self, account: str, resource_id: str) -> None:
        if self.count(account) >= number(self.read(account, COUNTER), "limit"):
            raise LimitReached(account)
        self._record(account, resource_id, "create", 1)

    def delete(self, account: str, resource_id: str) -> bool:
        if self.read(account, f"change#{resource_id}#create") is None:
            return False
        self._record(account, resource_id, "delete", -1)
        return True

    def count(self, account: str) -> int:
        return sum(number(item, "change") for item in self._changes(account))

    def live(self, account: str) -> int:
        kinds = [item["sk"]["S"].rsplit("#", 1)[1] for item in self._changes(account)]
        return kinds.count("create") - kinds.count("delete")

    def _changes(self, account: str) -> list[dict[str, Any]]:
        pages = self.query_pages(
            KeyConditionExpression="pk = :account AND begins_with(sk, :changes)",
            ExpressionAttributeValues={":account": {"S": account}, ":changes": {"S": "change#"}},
        )
        return [item for page in pages for item in page["Items"]]

    def _record(self, account: str, resource_id: str, kind: str, change: int) -> None:
        item = {**self.key(account, f"change#{resource_id}#{kind}"), "change": {"N": str(change)}}
        self.dynamodb.put_item(TableName=self.table, Item=item)


class ResourceSet(Approach):
    name = "set"
    title = "7 set of resource ids"
    source = "blog approach 7"

    def open_account(self, account: str, limit: int) -> None:
        self.put_counter(account, limit)

    def create(self, account: str, resource_id: str) -> None:
        try:
            self._update(
                account,
                resource_id,
                "ADD ids :id",
                "attribute_not_exists(ids) OR (size(ids) < #limit AND NOT contains(ids, :rid))",
            )
        except ClientError as error:
            if not failed_condition(error):
                raise
            if resource_id not in self._ids(account):
                raise LimitReached(account) from error
        self.dynamodb.put_item(TableName=self.table, Item=self.resource_item(account, resource_id))

    def delete(self, account: str, resource_id: str) -> bool:
        try:
            self._update(account, resource_id, "DELETE ids :id", "contains(ids, :rid)")
        except ClientError as error:
            if not failed_condition(error):
                raise
            found = False  # not in the set: never created, or deleted already (this call's retry)
        else:
            found = True
        self.dynamodb.delete_item(TableName=self.table, Key=self.key(account, f"resource#{resource_id}"))
        return found

    def count(self, account: str) -> int:
        return len(self._ids(account))

    def _ids(self, account: str) -> list[str]:
        return list((self.read(account, COUNTER) or {}).get("ids", {}).get("SS", []))

    def _update(self, account: str, resource_id: str, expression: str, condition: str) -> None:
        names = {"#limit": "limit"} if "#limit" in condition else {}
        self.dynamodb.update_item(
            TableName=self.table,
            Key=self.key(account, COUNTER),
            UpdateExpression=expression,
            ConditionExpression=condition,
            ExpressionAttributeValues={":id": {"SS": [resource_id]}, ":rid": {"S": resource_id}},
            **({"ExpressionAttributeNames": names} if names else {}),
        )
