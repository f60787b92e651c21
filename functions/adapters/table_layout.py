"""The single table's physical layout: its key attributes, its indexes (their keys and what they
project), its TTL attribute, and the stream filter that picks the consumer's records.

The stack (infra/data.py, infra/counting.py, infra/table_access.py) builds the table from this
module, and the codecs write their items by it, so the table the functions expect and the table
CDK deploys cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from functions.adapters.keys import EVENT_PREFIX, LIMIT_CHANGE_PREFIX, PLAN_PREFIX, RESOURCE_PREFIX

PARTITION_KEY = "pk"
SORT_KEY = "sk"

# Every item says which family it belongs to (account, admission_shard, resource, tombstone).
ITEM_TYPE = "type"

# Epoch seconds after which DynamoDB's TTL deletes the item (tombstones, rate windows). TTL deletes
# are free, and their REMOVE records match no stream filter pattern.
EXPIRES_AT = "expires_at"

# A resource's counting state: what the stream filter and the pending index select on.
COUNTER_PROCESSED = "counter_processed"
DELETED = "deleted"

# Pending index keys: a resource with counting work left carries them, and loses them once counted.
PENDING_BUCKET = "pending_bucket"
PENDING_SINCE = "pending_since"
# Activity index keys: every account and admission shard item carries them.
ACTIVITY_BUCKET = "activity_bucket"
LAST_WRITE = "last_write_at"  # an API write's time rounded up to the minute (healing.last_write_stamp)
# Accounts index key: the default type's account item (one per account) carries it: its plan's
# name, or NO_PLAN for an account on none (docs/plans.md, "The account registry").
REGISTRY = "registry"
NO_PLAN = "-"  # never a plan's name (a plan's starts with a letter)


@dataclass(frozen=True)
class Index:
    """A global secondary index: its name, key attributes and the attributes it projects (with the keys)."""

    name: str
    partition_key: str
    sort_key: str
    projected: tuple[str, ...]


# Sparse: only resources with counting work left (counter_processed=false, deleted=true, or a resize
# to count) carry its
# partition key, spread over fixed buckets (keys.pending_bucket) so no index key runs hot. A sweep
# reads it with a Scan (only the entries it holds), never the table.
PENDING_INDEX = Index("pending", PENDING_BUCKET, PENDING_SINCE, (COUNTER_PROCESSED, DELETED))

# Sparse: account and shard items by the time of their last API write, over fixed buckets
# (keys.activity_bucket): the sweeper finds accounts that went quiet without scanning.
ACTIVITY_INDEX = Index("activity", ACTIVITY_BUCKET, LAST_WRITE, ("account_id", "healed_at"))


# Sparse: only the default type's account item of each account carries its partition key (the
# account's plan, or NO_PLAN), sorted by account id: `GET /accounts` pages it with a Query, never a
# Scan. It projects only the membership, which nothing but a plan's application writes, so the
# counter path's writes of that item (room, counts, stamps) never write the index.
ACCOUNTS_INDEX = Index("accounts", REGISTRY, "account_id", ("plan", "plan_version"))


def item_key(pk: str, sk: str) -> dict[str, Any]:
    """An item's key, as DynamoDB's calls take it."""
    return {PARTITION_KEY: {"S": pk}, SORT_KEY: {"S": sk}}


# A resize of a counted resource not counted yet: the units the counter holds for it
# (functions/adapters/resources.py).
COUNTED_UNITS = "counted_units"

# Lambda event filter patterns (OR-ed) for the stream consumer: only resource records that still
# have counting work invoke it. The counting core checks the same conditions
# (functions/core/counting.py, plan_record), because the redrive re-reads raw stream ranges that no
# filter has seen.
STREAM_FILTER_PATTERNS: tuple[dict[str, object], ...] = (
    {
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {
            "Keys": {SORT_KEY: {"S": [{"prefix": RESOURCE_PREFIX}]}},
            "NewImage": {COUNTER_PROCESSED: {"BOOL": [False]}},
        },
    },
    {
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {
            "Keys": {SORT_KEY: {"S": [{"prefix": RESOURCE_PREFIX}]}},
            "NewImage": {DELETED: {"BOOL": [True]}},
        },
    },
    {
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {
            "Keys": {SORT_KEY: {"S": [{"prefix": RESOURCE_PREFIX}]}},
            "NewImage": {COUNTED_UNITS: {"N": [{"exists": True}]}},
        },
    },
    # A limit change's outbox item: the consumer decides the quota's crossings on the new limit.
    {"eventName": ["INSERT"], "dynamodb": {"Keys": {SORT_KEY: {"S": [{"prefix": LIMIT_CHANGE_PREFIX}]}}}},
)

# The event publisher's filter: only the inserts of usage events' outbox items invoke it
# (functions/adapters/outbox.py). Their TTL deletes are REMOVE records, which it never sees.
OUTBOX_FILTER_PATTERNS: tuple[dict[str, object], ...] = (
    {"eventName": ["INSERT"], "dynamodb": {"Keys": {SORT_KEY: {"S": [{"prefix": EVENT_PREFIX}]}}}},
)

# The plan rollout's pager (functions/plan_rollout/handler.py): a plan item's insert or change, each
# a version of the plan, and no other record.
PLAN_FILTER_PATTERNS: tuple[dict[str, object], ...] = (
    {"eventName": ["INSERT", "MODIFY"], "dynamodb": {"Keys": {SORT_KEY: {"S": [{"prefix": PLAN_PREFIX}]}}}},
)
