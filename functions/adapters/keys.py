"""The key layout of the single table: one function per item family builds its keys from the
quota (functions/core/model.py) whose items they are, and one, `quota_of`, parses a quota back.

A quota's items share its partition (`ACCOUNT#<id>`): its account item (`ACCOUNT`, admission shard
0), its eventual counter (`COUNTER`, counter shard 0), its resources (`RESOURCE#<id>`) and its
usage events' outbox items (`EVENT#<seq>`). A busy
quota's other admission shards and counter shards each have a partition key of their own, so its
writes spread over partitions (docs/scaling.md). Rate windows are the tenant's: keyed by account.

Every quota today is an account's default type, whose keys are these, as they always were; a key
of another type is issue 29's to lay out, and asking for one raises.
"""

from __future__ import annotations

import hashlib

from functions.core.model import Quota, require_default_type

ACCOUNT_PREFIX = "ACCOUNT#"
ACCOUNT_SORT_KEY = "ACCOUNT"
# Admission shard i >= 1 (functions/core/admission.py): `SHARD#<account>#<i>` / `SHARD`.
SHARD_PREFIX = "SHARD#"
SHARD_SORT_KEY = "SHARD"
# Eventual counter shard 0 is `COUNTER` in the account's partition; shard j >= 1 is
# `COUNTER#<account>#<j>` / `COUNTER` (functions/core/counting.py, counter_shard).
COUNTER_PREFIX = "COUNTER#"
COUNTER_SORT_KEY = "COUNTER"
RESOURCE_PREFIX = "RESOURCE#"
# A usage event's outbox item (functions/adapters/outbox.py): `EVENT#<seq>`, the seq zero-padded so
# that a quota's events sort in their order.
EVENT_PREFIX = "EVENT#"
# Per-tenant rate windows (functions/core/rate_limits.py): `RATE#<account>#<window ms>#<index>` /
# `RATE`, a partition key per window.
RATE_PREFIX = "RATE#"
RATE_SORT_KEY = "RATE"

# 1,024 pending buckets: a create+delete iteration writes the index 4 times, so at 100,000
# iterations/s for the whole table each bucket takes about 390 WCU/s of a partition's 1,000
# (docs/scaling.md). The sweep's Scan costs the same whatever the count. Bucket names only grow
# (PENDING#00 .. PENDING#1023): an item keeps the bucket it was written with, which stays a bucket
# of the index.
PENDING_BUCKET_COUNT = 1024
# 128 activity buckets: an entry moves at most once a minute, so they spread far more than the
# writes need.
ACTIVITY_BUCKET_COUNT = 128


def _name(quota: Quota) -> str:
    """What a quota's keys are built from."""
    require_default_type(quota)
    return quota.account_id


def account_pk(quota: Quota) -> str:
    """The quota's partition: its account item, its counter shard 0 and its resources."""
    return f"{ACCOUNT_PREFIX}{_name(quota)}"


def shard_pk(quota: Quota, shard: int) -> str:
    """Admission shard i >= 1 of a quota: a partition key of its own (shard 0 is the account item)."""
    return f"{SHARD_PREFIX}{_name(quota)}#{shard:02d}"


def counter_pk(quota: Quota, shard: int) -> str:
    """Eventual counter shard j >= 1 of a busy quota (shard 0 is the COUNTER item of its partition)."""
    return f"{COUNTER_PREFIX}{_name(quota)}#{shard}"


def resource_sk(resource_id: str) -> str:
    return f"{RESOURCE_PREFIX}{resource_id}"


def quota_of(pk: str) -> Quota | None:
    """The quota whose item has partition key `pk` (its account item, shard, counter shard or
    resource); None for any other key."""
    if pk.startswith(ACCOUNT_PREFIX):
        account_id = pk[len(ACCOUNT_PREFIX) :]
    elif pk.startswith((SHARD_PREFIX, COUNTER_PREFIX)):
        account_id = pk.split("#")[1] if pk.count("#") == 2 else ""
    else:
        return None
    return Quota(account_id) if account_id else None


def event_sk(seq: int) -> str:
    return f"{EVENT_PREFIX}{seq:012d}"


def resource_id_from_sk(sk: str) -> str | None:
    return sk[len(RESOURCE_PREFIX) :] if sk.startswith(RESOURCE_PREFIX) else None


def _bucket_of(text: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % count


def pending_bucket(quota: Quota, resource_id: str) -> str:
    """Spread pending resources evenly over the sparse index's fixed set of partitions."""
    return pending_bucket_name(_bucket_of(f"{_name(quota)}/{resource_id}", PENDING_BUCKET_COUNT))


def pending_bucket_name(index: int) -> str:
    return f"PENDING#{index:02d}"


def activity_bucket(quota: Quota, shard: int = 0) -> str:
    """A quota's (or one of its admission shards') fixed partition in the activity index: a busy
    quota's shards spread over the buckets as quotas do."""
    name = _name(quota) if shard == 0 else f"{_name(quota)}#{shard}"
    return activity_bucket_name(_bucket_of(name, ACTIVITY_BUCKET_COUNT))


def activity_bucket_name(index: int) -> str:
    return f"ACTIVITY#{index:02d}"


def rate_window_pk(account_id: str, window_ms: int, index: int, part: int = 0) -> str:
    """One rate window of an account (or part `part` >= 1 of a busy tenant's window): a partition
    key per window and part, so no window item stays hot."""
    suffix = f"#{part}" if part else ""
    return f"{RATE_PREFIX}{account_id}#{window_ms}#{index}{suffix}"
