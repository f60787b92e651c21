"""Key layout of the single table: every item of an account shares its partition."""

from __future__ import annotations

import hashlib

from functions.core import schema


def account_pk(account_id: str) -> str:
    return f"{schema.ACCOUNT_PREFIX}{account_id}"


def resource_sk(resource_id: str) -> str:
    return f"{schema.RESOURCE_PREFIX}{resource_id}"


def account_id_from_pk(pk: str) -> str | None:
    return pk[len(schema.ACCOUNT_PREFIX) :] if pk.startswith(schema.ACCOUNT_PREFIX) else None


def resource_id_from_sk(sk: str) -> str | None:
    return sk[len(schema.RESOURCE_PREFIX) :] if sk.startswith(schema.RESOURCE_PREFIX) else None


def pending_bucket(account_id: str, resource_id: str) -> str:
    """Spread pending resources evenly over the sparse index's fixed set of partitions."""
    digest = hashlib.sha256(f"{account_id}/{resource_id}".encode()).digest()
    return pending_bucket_name(int.from_bytes(digest[:4], "big") % schema.PENDING_BUCKET_COUNT)


def pending_bucket_name(index: int) -> str:
    return f"PENDING#{index:02d}"
