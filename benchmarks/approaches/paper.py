"""The hybrid counter as the paper publishes it (seed 001, "Implementation Details").

Create: read both counters, check max(best effort, eventual) below the limit, put the resource
with `counter_processed = false`, add 1 to the best-effort counter. Delete: subtract 1 from the
best-effort counter, set `deleted = true`. The stream consumer, one transaction per record: add 1
to the eventual counter and set `counter_processed = true` on condition that it was false; or
subtract 1 and hard-delete the resource on condition that it is soft-deleted. A transaction
cancelled by its condition was applied before: the consumer moves on.

The counters are two items (the paper does not say where they live). The best-effort ADDs are
plain, as published: a lost answer's SDK retry applies them twice. `count` is the eventual counter,
the one the paper makes exact; the best-effort counter is reported beside it.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from benchmarks.approaches.base import Approach, LimitReached, cancellation_codes, failed_condition, number

BEST_EFFORT, EVENTUAL = "#best-effort", "#eventual"


class PaperDesign(Approach):
    name = "paper"
    title = "paper, as published"
    source = "seed 001"
    has_stream = True

    def open_account(self, account: str, limit: int) -> None:
        self.dynamodb.put_item(
            TableName=self.table, Item={**self.key(account, BEST_EFFORT), "limit": {"N": str(limit)}}
        )

    def create(self, account: str, resource_id: str) -> None:
        counters = self.dynamodb.query(
            TableName=self.table,
            KeyConditionExpression="pk = :account AND begins_with(sk, :hash)",
            ExpressionAttributeValues={":account": {"S": account}, ":hash": {"S": "#"}},
            ConsistentRead=True,
        )["Items"]
        found = {item["sk"]["S"]: item for item in counters}
        best_effort, eventual = number(found.get(BEST_EFFORT), "count"), number(found.get(EVENTUAL), "count")
        if max(best_effort, eventual) >= number(found.get(BEST_EFFORT), "limit"):
            raise LimitReached(account)
        try:
            self.dynamodb.put_item(
                TableName=self.table,
                Item=self.resource_item(account, resource_id, counter_processed={"BOOL": False}),
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as error:
            if failed_condition(error):
                return  # created before
            raise
        self._add(account, BEST_EFFORT, 1)

    def delete(self, account: str, resource_id: str) -> bool:
        resource = self.read(account, f"resource#{resource_id}")
        if resource is None or resource.get("deleted", {}).get("BOOL"):
            return False
        self._add(account, BEST_EFFORT, -1)
        self.dynamodb.update_item(
            TableName=self.table,
            Key=self.key(account, f"resource#{resource_id}"),
            UpdateExpression="SET deleted = :true",
            ExpressionAttributeValues={":true": {"BOOL": True}},
        )
        return True

    def count(self, account: str) -> int:
        return number(self.read(account, EVENTUAL), "count")

    def best_effort(self, account: str) -> int:
        return number(self.read(account, BEST_EFFORT), "count")

    def consume(self) -> int:
        assert self.tap is not None
        records, self.pending = [*self.pending, *self.tap.drain()], []
        for record in records:
            try:
                self._apply(record["eventName"], record["dynamodb"])
            except ClientError:
                self.pending.append(record)  # the stream delivers it again
        return len(records)

    def _apply(self, event: str, data: dict[str, Any]) -> None:
        new, old = data.get("NewImage") or {}, data.get("OldImage") or {}
        if not new.get("sk", {}).get("S", "").startswith("resource#"):
            return
        account, key = new["pk"]["S"], {"pk": new["pk"], "sk": new["sk"]}
        if event == "INSERT" and new.get("counter_processed") == {"BOOL": False}:
            action: dict[str, Any] = {
                "Update": {
                    "TableName": self.table,
                    "Key": key,
                    "UpdateExpression": "SET counter_processed = :true",
                    "ConditionExpression": "counter_processed = :false",
                    "ExpressionAttributeValues": {":true": {"BOOL": True}, ":false": {"BOOL": False}},
                }
            }
            change = 1
        elif event == "MODIFY" and new.get("deleted") == {"BOOL": True} and old.get("deleted") != {"BOOL": True}:
            action = {
                "Delete": {
                    "TableName": self.table,
                    "Key": key,
                    "ConditionExpression": "deleted = :true",
                    "ExpressionAttributeValues": {":true": {"BOOL": True}},
                }
            }
            change = -1
        else:
            return
        counter = {
            "TableName": self.table,
            "Key": self.key(account, EVENTUAL),
            "UpdateExpression": "ADD #count :change",
            "ExpressionAttributeNames": {"#count": "count"},
            "ExpressionAttributeValues": {":change": {"N": str(change)}},
        }
        try:
            self.dynamodb.transact_write_items(TransactItems=[{"Update": counter}, action])
        except ClientError as error:
            if cancellation_codes(error)[1:] != ["ConditionalCheckFailed"]:
                raise  # a conflict or a throttle: retried with the record

    def _add(self, account: str, sort_key: str, change: int) -> None:
        self.dynamodb.update_item(
            TableName=self.table,
            Key=self.key(account, sort_key),
            UpdateExpression="ADD #count :change",
            ExpressionAttributeNames={"#count": "count"},
            ExpressionAttributeValues={":change": {"N": str(change)}},
        )
