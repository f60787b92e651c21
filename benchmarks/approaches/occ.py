"""Approaches 2 and 3 of the AWS blog (seed 000): optimistic concurrency control, and OCC with
the history of recent writers.

Read the counter and its entity tag, check the limit, write the new value on condition that the
tag is unchanged, then store the resource. When the write fails its condition (another writer
won, or this writer's own retry after a lost answer), read again: the write landed if the tag is
ours (OCC) or holds ours among the last HISTORY writers (OCC with history). Plain OCC cannot tell
"ours, then another writer's" from "not ours" and writes again: an overcount under contention.
"""

from __future__ import annotations

import uuid

from botocore.exceptions import ClientError

from benchmarks.approaches.base import COUNTER, Approach, LimitReached, failed_condition, number

HISTORY = 10  # writers the tag remembers (the blog trims the oldest to bound the item's size)


class OptimisticCounter(Approach):
    name = "occ"
    title = "2 OCC"
    source = "blog approach 2"
    keeps_history = False

    def open_account(self, account: str, limit: int) -> None:
        self.put_counter(account, limit, count={"N": "0"}, tag={"S": "0"})

    def create(self, account: str, resource_id: str) -> None:
        self._change(account, 1)
        self.dynamodb.put_item(TableName=self.table, Item=self.resource_item(account, resource_id))

    def delete(self, account: str, resource_id: str) -> bool:
        if not self.delete_resource_item(account, resource_id):
            return False
        self._change(account, -1)
        return True

    def count(self, account: str) -> int:
        return number(self.read(account, COUNTER), "count")

    def _change(self, account: str, change: int) -> None:
        while True:
            counter = self.read(account, COUNTER) or {}
            count, limit, tag = number(counter, "count"), number(counter, "limit"), counter["tag"]["S"]
            if change > 0 and count + change > limit:
                raise LimitReached(account)
            mine = uuid.uuid4().hex[:8]
            new_tag = "-".join([*tag.split("-")[-(HISTORY - 1) :], mine]) if self.keeps_history else mine
            try:
                self.dynamodb.update_item(
                    TableName=self.table,
                    Key=self.key(account, COUNTER),
                    UpdateExpression="SET #count = :count, #tag = :new",
                    ConditionExpression="#tag = :old",
                    ExpressionAttributeNames={"#count": "count", "#tag": "tag"},
                    ExpressionAttributeValues={
                        ":count": {"N": str(count + change)},
                        ":new": {"S": new_tag},
                        ":old": {"S": tag},
                    },
                )
                return
            except ClientError as error:
                if not failed_condition(error):
                    raise
            now = (self.read(account, COUNTER) or {})["tag"]["S"]
            if (mine in now.split("-")) if self.keeps_history else now == new_tag:
                return  # our write landed; its answer was lost and the SDK's retry failed the condition


class OptimisticCounterWithHistory(OptimisticCounter):
    name = "occ-history"
    title = "3 OCC with history"
    source = "blog approach 3"
    keeps_history = True
