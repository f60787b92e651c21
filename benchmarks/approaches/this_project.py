"""This project: the hybrid counter with leases (docs/admission.md), run through its real core
flows and DynamoDB adapters, the stream consumer applying records as the deployed one does.

`create` passes the harness's resource id as the Idempotency-Key, so a caller's retry is the API's
replay. A limit named `<account>/<type>` (`make bench --types N`) is that type of the account.
`count` is the eventual counter, as for the paper; the best-effort counter is reported beside it.
"""

from __future__ import annotations

from benchmarks.approaches.base import Approach, LimitReached
from benchmarks.capacity import WALL_CLOCK, now_text
from functions.adapters.api_store import DynamoApiStore
from functions.adapters.counting_store import DynamoCountingStore
from functions.adapters.dynamo_table import DynamoTable
from functions.adapters.keys import account_pk
from functions.core import accounts
from functions.core.errors import LimitExceeded, ResourceNotFound
from functions.core.model import NewResource, Quota, idempotent_resource_id
from tests.support.stream import StreamTap, process_stream_records
from tests.support.tables import create_table
from tests.support.truth import read_truth


def quota_of(limit: str) -> Quota:
    """`acme` is the account's default type, `acme/seats` its type `seats` (as Quota prints them)."""
    account_id, _, resource_type = limit.partition("/")
    return Quota(account_id, resource_type) if resource_type else Quota(account_id)


class ThisProject(Approach):
    name = "this-project"
    title = "this project"
    source = "docs/admission.md"
    has_stream = True

    def create_table(self) -> None:
        create_table(self.dynamodb, self.table)  # from the synthesized template

    def connect(self, tap: StreamTap | None = None) -> None:
        super().connect(tap)
        table = DynamoTable(self.dynamodb, self.table)
        self._api = DynamoApiStore(table)
        self._counting = DynamoCountingStore(table, WALL_CLOCK)

    def open_account(self, account: str, limit: int) -> None:
        accounts.put_limit(self._api, quota_of(account), accounts.limit_change(limit, WALL_CLOCK.epoch_ms()), now_text)

    def create(self, account: str, resource_id: str) -> None:
        try:
            accounts.create_resource(self._api, quota_of(account), NewResource("vm", {}), resource_id, now_text)
        except LimitExceeded as refused:
            raise LimitReached(account) from refused

    def delete(self, account: str, resource_id: str) -> bool:
        try:
            accounts.delete_resource(
                self._api, quota_of(account), idempotent_resource_id(quota_of(account), resource_id), now_text
            )
        except ResourceNotFound:
            return False
        return True

    def count(self, account: str) -> int:
        return accounts.get_usage(self._api, quota_of(account)).eventual

    def live(self, account: str) -> int:
        return read_truth(self.dynamodb, self.table)[account_pk(quota_of(account))].live

    def best_effort(self, account: str) -> int:
        return accounts.get_usage(self._api, quota_of(account)).best_effort_net

    def consume(self) -> int:
        assert self.tap is not None
        records = [*self.pending, *self.tap.drain()]
        failed = set(process_stream_records(self._counting, records).failed)
        self.pending = [record for record in records if record["dynamodb"]["SequenceNumber"] in failed]
        return len(records)
