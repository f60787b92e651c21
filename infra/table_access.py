"""Least privilege on the table: each function may call exactly the DynamoDB actions its code
calls, on the table and on the indexes it reads by name, nothing else (docs/security.md).

A transaction is authorized per action: `TransactWriteItems` needs `UpdateItem` for each Update in
it (`ConditionCheckItem` for each ConditionCheck), `TransactGetItems` needs `GetItem` (DynamoDB
developer guide, "Using IAM with DynamoDB transactions"). `tests/handler/test_least_privilege.py`
records the calls each handler makes and checks them against these lists, both ways.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam

from functions.adapters.table_layout import ACCOUNTS_INDEX, ACTIVITY_INDEX, PENDING_INDEX

# The API: admission (conditional updates, room moves in transactions, a limit changed with its
# event's outbox item put and, lowered, condition checks), resources (put, get, list), usage (batch
# reads), and a snapshot (TransactGetItems); a type's removal (functions/core/lifecycle.py): its
# partition's other items deleted in batches, its shards and counters in a transaction's Deletes.
API = (
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
# The account registry's pages (`GET /accounts`): Queries of the accounts index.
API_INDEXES = {ACCOUNTS_INDEX.name: ("dynamodb:Query",)}
# The plan rollout's pager: the plan (GetItem) and its accounts' registry page (the accounts index).
# Its worker applies a plan as a PUT of an account on it does (the limit's calls of the API), and
# pages on as the pager does.
ROLLOUT_PAGER = ("dynamodb:GetItem",)
ROLLOUT_WORKER = (
    "dynamodb:BatchGetItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
)
# Counting a batch: one conditional update, or one transaction of updates; a usage-threshold
# decision also reads the account item and the counter shards (batched).
COUNTING = ("dynamodb:BatchGetItem", "dynamodb:UpdateItem")
# The sweeper: pending resources (the pending index), quiet accounts (the activity index), a heal's
# reads (the account's items, its partition, the resources of dead leases, all batched) and writes
# (updates, transactions of them); the expiring grants' index (a Query per hour, each handled entry
# deleted) and a grant's ending as `DELETE .../override` makes it (its plan read, the limit changed
# with its event's outbox item put and, lowered below shard 0's room, condition checks); deleted
# accounts' erasure (the deletions' partition queried, every item of an account deleted in batches).
SWEEPER = (
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
# The pending index is scanned (it holds only pending work), the activity index queried by bucket.
SWEEPER_INDEXES = {PENDING_INDEX.name: ("dynamodb:Scan",), ACTIVITY_INDEX.name: ("dynamodb:Query",)}
# The redrive, when a range's records are gone: the pending index, as a sweep reads it.
REDRIVE_INDEXES = {PENDING_INDEX.name: ("dynamodb:Scan",)}
# Limit Refused events (infra/refusals.py): the aggregator's one conditional update per window; the
# emitter's consistent read of a window and its transaction (the window updated, the event put).
REFUSAL_AGGREGATOR = ("dynamodb:UpdateItem",)
REFUSAL_EMITTER = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
# The redrive's re-read of a stream range.
STREAM_READS = ("dynamodb:GetRecords", "dynamodb:GetShardIterator")


def grant_table(
    table: dynamodb.ITable,
    grantee: iam.IGrantable,
    actions: Sequence[str],
    index_actions: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """`actions` on the table's items; on each index named in `index_actions`, its actions."""
    principal = grantee.grant_principal
    principal.add_to_principal_policy(iam.PolicyStatement(actions=list(actions), resources=[table.table_arn]))
    for name, on_index in (index_actions or {}).items():
        index = f"{table.table_arn}/index/{name}"
        principal.add_to_principal_policy(iam.PolicyStatement(actions=list(on_index), resources=[index]))


def grant_stream(table: dynamodb.ITable, grantee: iam.IGrantable, actions: Sequence[str]) -> None:
    stream_arn = table.table_stream_arn
    if stream_arn is None:  # the table is always created with a stream; this narrows the type
        raise AssertionError("the table has no stream")
    grantee.grant_principal.add_to_principal_policy(iam.PolicyStatement(actions=list(actions), resources=[stream_arn]))
