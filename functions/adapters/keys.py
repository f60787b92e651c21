"""The key layout of the single table: one function per item family builds its keys from the
quota (functions/core/model.py) whose items they are, and one, `quota_of`, parses a quota back.

Every key is built from the quota's *name*: the account id for the default type (so a table written by a
release without types reads as the default type's, key for key), `<account>#<type>` for another type (account ids
and type names never hold a `#`). A quota's items share its partition (`ACCOUNT#<name>`): its
account item (`ACCOUNT`, admission shard 0), its eventual counter (`COUNTER`, counter shard 0), its
resources (`RESOURCE#<id>`), its usage events' outbox items (`EVENT#<seq>`) and its keyed PUTs'
records (`PUT#<id>`). A busy quota's
other admission shards and counter shards each have a partition key of their own, so its writes
spread over partitions (docs/scaling.md). So each type of an account has partition keys of its
own: a busy type never heats its siblings. Rate windows are the tenant's: keyed by account.
"""

from __future__ import annotations

import hashlib
import re

from functions.core.model import PERIOD_ID_PATTERN, RESOURCE_TYPE_PATTERN, Quota

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
# A limit change's outbox item, `EVENT#LIMIT#<limit version>`: written by the PUT that changes the
# limit, under EVENT# so the publisher and `ops events replay` take it as they take crossings.
LIMIT_CHANGE_PREFIX = f"{EVENT_PREFIX}LIMIT#"
# A quota's refused creates in one minute (functions/core/refusals.py): `REFUSED#<minute>`, and the
# Limit Refused event announcing them, `EVENT#REFUSED#<minute>`, taken by the publisher as any
# `EVENT#` item (and by no filter of the consumer's).
REFUSED_WINDOW_PREFIX = "REFUSED#"
LIMIT_REFUSED_PREFIX = f"{EVENT_PREFIX}REFUSED#"
# A keyed PUT's record (functions/core/accounts.py, `put_account`): `PUT#<id the key names>`, in
# the quota's partition, kept for the key's window (TTL).
PUT_REQUEST_PREFIX = "PUT#"
# Plans (functions/core/plans.py): every plan in one partition, `PLANS`, a sort key per plan,
# `PLAN#<name>`, so the plans are listed by a Query (plans are few and written rarely).
PLANS_PK = "PLANS"
PLAN_PREFIX = "PLAN#"
# Expiring grants (functions/core/grants.py): an entry per grant in the partition of the UTC hour
# its override ends, `GRANTS#<YYYY-MM-DDTHH>`, sorted by the end (epoch ms, zero-padded) then the
# quota's name, so the sweeper finds the grants ended by a Query per hour it looks back, never a Scan.
GRANTS_PREFIX = "GRANTS#"
# Accounts being deleted (functions/core/offboarding.py): an entry each in one partition,
# `DELETIONS`, sort key the account id, so the sweeper finds them by a Query, never a Scan; the
# entry is the account's tombstone until its erasure ends. Its Account Deleted event's outbox item
# is `EVENT#DELETED` in the account's partition (erased with it, once the stream has published it).
DELETIONS_PK = "DELETIONS"
ACCOUNT_DELETED_SK = f"{EVENT_PREFIX}DELETED"
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


# Between the account id and the type in a typed quota's name.
TYPE_SEPARATOR = "#"
# Between a quota's name and its period's id in a period's name (neither holds an `@`).
PERIOD_SEPARATOR = "@"
_RESOURCE_TYPE = re.compile(RESOURCE_TYPE_PATTERN)
_PERIOD_ID = re.compile(PERIOD_ID_PATTERN)


def _name(quota: Quota) -> str:
    """What a quota's keys are built from: the account id, for a type other than the default `#`
    and the type, and for one period of a periodic quota `@` and the period's id. A type or a
    period outside its pattern could forge another quota's keys: refused."""
    if quota.period and not _PERIOD_ID.fullmatch(quota.period):
        raise ValueError(f"period {quota.period!r} is not a period id")
    period = f"{PERIOD_SEPARATOR}{quota.period}" if quota.period else ""
    if quota.is_default:
        return quota.account_id + period
    if not _RESOURCE_TYPE.fullmatch(quota.resource_type):
        raise ValueError(f"resource type {quota.resource_type!r} is not a type name")
    return f"{quota.account_id}{TYPE_SEPARATOR}{quota.resource_type}{period}"


def _quota_named(name: str) -> Quota | None:
    """The quota whose name is `name`; None if no quota has that name."""
    name, at, period = name.partition(PERIOD_SEPARATOR)
    if at and not _PERIOD_ID.fullmatch(period):
        return None
    account_id, separator, resource_type = name.partition(TYPE_SEPARATOR)
    if not account_id or TYPE_SEPARATOR in account_id:
        return None
    if not separator:
        return Quota(account_id, period=period)
    if not _RESOURCE_TYPE.fullmatch(resource_type) or Quota(account_id, resource_type).is_default:
        return None  # the default type's keys never name it
    return Quota(account_id, resource_type, period)


def account_pk(quota: Quota) -> str:
    """The quota's partition: its account item, its counter shard 0 and its resources. A period
    of a periodic quota has one of its own (its shard 0, counter shard 0 and crossings' outbox)."""
    return f"{ACCOUNT_PREFIX}{_name(quota)}"


def resources_pk(quota: Quota) -> str:
    """Where a quota's resources are: its partition, whatever period admitted them, so that an
    Idempotency-Key names one record whichever period its retry comes in."""
    return account_pk(quota.whole)


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
    resource: `ACCOUNT#<name>`, `SHARD#<name>#<i>`, `COUNTER#<name>#<j>`); None for any other key."""
    if pk.startswith(ACCOUNT_PREFIX):
        return _quota_named(pk[len(ACCOUNT_PREFIX) :])
    for prefix in (SHARD_PREFIX, COUNTER_PREFIX):
        if pk.startswith(prefix):
            name, separator, shard = pk[len(prefix) :].rpartition(TYPE_SEPARATOR)
            return _quota_named(name) if separator and shard.isdigit() else None
    return None


def event_sk(seq: int) -> str:
    return f"{EVENT_PREFIX}{seq:012d}"


def limit_change_sk(limit_version: int) -> str:
    return f"{LIMIT_CHANGE_PREFIX}{limit_version:012d}"


def limit_version_from_sk(sk: str) -> int | None:
    """The limit version a limit change's outbox key names; None for any other key."""
    digits = sk.removeprefix(LIMIT_CHANGE_PREFIX)
    return int(digits) if digits != sk and digits.isdigit() else None


def put_request_sk(put_id: str) -> str:
    return f"{PUT_REQUEST_PREFIX}{put_id}"


def refused_window_sk(minute: str) -> str:
    return f"{REFUSED_WINDOW_PREFIX}{minute}"


def limit_refused_sk(minute: str) -> str:
    return f"{LIMIT_REFUSED_PREFIX}{minute}"


def plan_sk(name: str) -> str:
    """A plan's sort key in the plans' partition: its name is a type name (no `#`)."""
    if not _RESOURCE_TYPE.fullmatch(name):
        raise ValueError(f"plan {name!r} is not a plan name")
    return f"{PLAN_PREFIX}{name}"


def plan_name_from_sk(sk: str) -> str | None:
    """The plan whose sort key is `sk`; None for any other key."""
    name = sk[len(PLAN_PREFIX) :] if sk.startswith(PLAN_PREFIX) else ""
    return name if _RESOURCE_TYPE.fullmatch(name) else None


def resource_id_from_sk(sk: str) -> str | None:
    return sk[len(RESOURCE_PREFIX) :] if sk.startswith(RESOURCE_PREFIX) else None


def _bucket_of(text: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % count


def pending_bucket(quota: Quota, resource_id: str) -> str:
    """Spread pending resources evenly over the sparse index's fixed set of partitions (a usage
    record's bucket is its quota's, whatever its period: the record's key is)."""
    return pending_bucket_name(_bucket_of(f"{_name(quota.whole)}/{resource_id}", PENDING_BUCKET_COUNT))


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
