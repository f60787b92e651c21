"""The key layout of the single table: one function per item family builds its keys, and one
parses them back.

An account's items share its partition (`ACCOUNT#<id>`): its account item (`ACCOUNT`, admission
shard 0), its eventual counter (`COUNTER`, counter shard 0) and its resources (`RESOURCE#<id>`). A
busy account's other admission shards and counter shards each have a partition key of their own,
so its writes spread over partitions (docs/scaling.md). Rate windows are keyed by the account too.
"""

from __future__ import annotations

import hashlib

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


def account_pk(account_id: str) -> str:
    return f"{ACCOUNT_PREFIX}{account_id}"


def shard_pk(account_id: str, shard: int) -> str:
    """Admission shard i >= 1 of an account: a partition key of its own (shard 0 is the account item)."""
    return f"{SHARD_PREFIX}{account_id}#{shard:02d}"


def counter_pk(account_id: str, shard: int) -> str:
    """Eventual counter shard j >= 1 of a busy account (shard 0 is the COUNTER item of its partition)."""
    return f"{COUNTER_PREFIX}{account_id}#{shard}"


def resource_sk(resource_id: str) -> str:
    return f"{RESOURCE_PREFIX}{resource_id}"


def account_id_from_pk(pk: str) -> str | None:
    return pk[len(ACCOUNT_PREFIX) :] if pk.startswith(ACCOUNT_PREFIX) else None


def resource_id_from_sk(sk: str) -> str | None:
    return sk[len(RESOURCE_PREFIX) :] if sk.startswith(RESOURCE_PREFIX) else None


def _bucket_of(text: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % count


def pending_bucket(account_id: str, resource_id: str) -> str:
    """Spread pending resources evenly over the sparse index's fixed set of partitions."""
    return pending_bucket_name(_bucket_of(f"{account_id}/{resource_id}", PENDING_BUCKET_COUNT))


def pending_bucket_name(index: int) -> str:
    return f"PENDING#{index:02d}"


def activity_bucket(account_id: str, shard: int = 0) -> str:
    """An account's (or one of its admission shards') fixed partition in the activity index: a busy
    account's shards spread over the buckets as accounts do."""
    name = account_id if shard == 0 else f"{account_id}#{shard}"
    return activity_bucket_name(_bucket_of(name, ACTIVITY_BUCKET_COUNT))


def activity_bucket_name(index: int) -> str:
    return f"ACTIVITY#{index:02d}"


def rate_window_pk(account_id: str, window_ms: int, index: int, part: int = 0) -> str:
    """One rate window of an account (or part `part` >= 1 of a busy tenant's window): a partition
    key per window and part, so no window item stays hot."""
    suffix = f"#{part}" if part else ""
    return f"{RATE_PREFIX}{account_id}#{window_ms}#{index}{suffix}"
