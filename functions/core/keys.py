"""Key layout of the single table: an account's items share its partition, but for its admission shards."""

from __future__ import annotations

import hashlib

from functions.core import schema


def account_pk(account_id: str) -> str:
    return f"{schema.ACCOUNT_PREFIX}{account_id}"


def shard_pk(account_id: str, shard: int) -> str:
    """Admission shard i >= 1 of an account: a partition key of its own (shard 0 is the account item)."""
    return f"{schema.SHARD_PREFIX}{account_id}#{shard:02d}"


def counter_pk(account_id: str, shard: int) -> str:
    """Eventual counter shard j >= 1 of a busy account (shard 0 is the COUNTER item of its partition)."""
    return f"{schema.COUNTER_PREFIX}{account_id}#{shard}"


def resource_sk(resource_id: str) -> str:
    return f"{schema.RESOURCE_PREFIX}{resource_id}"


def account_id_from_pk(pk: str) -> str | None:
    return pk[len(schema.ACCOUNT_PREFIX) :] if pk.startswith(schema.ACCOUNT_PREFIX) else None


def resource_id_from_sk(sk: str) -> str | None:
    return sk[len(schema.RESOURCE_PREFIX) :] if sk.startswith(schema.RESOURCE_PREFIX) else None


def _bucket_of(text: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % count


def pending_bucket(account_id: str, resource_id: str) -> str:
    """Spread pending resources evenly over the sparse index's fixed set of partitions."""
    return pending_bucket_name(_bucket_of(f"{account_id}/{resource_id}", schema.PENDING_BUCKET_COUNT))


def pending_bucket_name(index: int) -> str:
    return f"PENDING#{index:02d}"


def activity_bucket(account_id: str, shard: int = 0) -> str:
    """An account's (or one of its admission shards') fixed partition in the activity index: a busy
    account's shards spread over the buckets as accounts do."""
    name = account_id if shard == 0 else f"{account_id}#{shard}"
    return activity_bucket_name(_bucket_of(name, schema.ACTIVITY_BUCKET_COUNT))


def activity_bucket_name(index: int) -> str:
    return f"ACTIVITY#{index:02d}"


def rate_window_pk(account_id: str, window_ms: int, index: int, part: int = 0) -> str:
    """One rate window of an account (or part `part` >= 1 of a busy tenant's window): a partition
    key per window and part, so no window item stays hot."""
    suffix = f"#{part}" if part else ""
    return f"{schema.RATE_PREFIX}{account_id}#{window_ms}#{index}{suffix}"
