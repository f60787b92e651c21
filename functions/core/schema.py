"""Names of the single table's keys, items and index, shared by the functions and the stack.

The stack imports this module too, so the table the functions expect and the table CDK deploys
cannot drift apart.
"""

from __future__ import annotations

PARTITION_KEY = "pk"
SORT_KEY = "sk"

ACCOUNT_PREFIX = "ACCOUNT#"
ACCOUNT_SORT_KEY = "ACCOUNT"
EVENTUAL_COUNTER_SORT_KEY = "COUNTER"
# A busy account's eventual counter is spread over counter shards, read as their sum: shard 0 is
# the `COUNTER` item above, shard j >= 1 `COUNTER#<account>#<j>` / `COUNTER`, a partition key of its
# own. The consumer writes shards >= 1 only for resources a shard >= 1 admitted, so only an account
# whose `shard_span` is above 1 can have them (functions/core/counting.py, docs/scaling.md).
COUNTER_PREFIX = "COUNTER#"
COUNTER_SHARDS = 8
RESOURCE_PREFIX = "RESOURCE#"

# Admission shards (functions/core/admission.py): shard 0 is the account item; shard i >= 1 is its
# own item, on its own partition key, so one account's admissions spread over partitions.
SHARD_PREFIX = "SHARD#"
SHARD_SORT_KEY = "SHARD"
ROOM_ATTRIBUTE = "room"  # slots the shard may still admit
ACTIVE_SHARDS_ATTRIBUTE = "shards"  # on the account item: creates pick among shards 0 .. shards-1
SHARD_SPAN_ATTRIBUTE = "shard_span"  # on the account item: every shard ever used is below it
RETIRED_ATTRIBUTE = "retired"  # a shard that admits nothing until shard 0 grants it room again
# On the account item: each limit change bumps its version (the account's ETag) and stamps when
# its PUT was received and its token, so an older PUT never overwrites a newer one.
LIMIT_VERSION_ATTRIBUTE = "limit_version"
LIMIT_SET_AT_ATTRIBUTE = "limit_set_at"
LIMIT_REQUEST_ATTRIBUTE = "limit_request"
RESOURCE_SHARD_ATTRIBUTE = "shard"  # on a resource: the shard that admitted it, where it is released

# Per-tenant rate windows (functions/core/rate_limits.py): `RATE#<account>#<window ms>#<index>` /
# `RATE`, a partition key per window, holding the requests counted in it. TTL removes it soon after.
RATE_PREFIX = "RATE#"
RATE_SORT_KEY = "RATE"
RATE_USED_ATTRIBUTE = "used"
RATE_WINDOW_KEPT_SECONDS = 300  # past its end; TTL deletes, within days, are free
# An admin's rate for one account, on its account item (absent: the stack's default).
RATE_LIMIT_ATTRIBUTE = "rate_limit"
RATE_WINDOW_ATTRIBUTE = "rate_window_seconds"
# The JWT authorizer's (`-c authorizer=jwt`): the issuer and audience tokens must have, the claim
# naming the caller's account, and the scope (or Cognito group) of an admin.
ENV_JWT_ISSUER = "JWT_ISSUER"
ENV_JWT_AUDIENCE = "JWT_AUDIENCE"
ENV_JWT_TENANT_CLAIM = "JWT_TENANT_CLAIM"
ENV_JWT_ADMIN_SCOPE = "JWT_ADMIN_SCOPE"
# The API function's default tenant rate (the stack's tenantRateLimit and tenantBurstLimit).
ENV_TENANT_RATE_LIMIT = "TENANT_RATE_LIMIT"
ENV_TENANT_WINDOW_SECONDS = "TENANT_RATE_WINDOW_SECONDS"

# Sparse index holding only resources with counting work left to do (counter_processed=false or
# deleted=true). Its partition key is spread over a fixed number of buckets so no index key runs
# hot; a sweep reads it with a Scan (only the entries it holds), never the table.
PENDING_INDEX_NAME = "pending"
PENDING_BUCKET_ATTRIBUTE = "pending_bucket"
PENDING_SINCE_ATTRIBUTE = "pending_since"
# 1,024 buckets: a create+delete iteration writes the index 4 times, so at 100,000 iterations/s for
# the whole table each bucket takes about 390 WCU/s of a partition's 1,000 (docs/scaling.md). The
# sweep's Scan costs the same whatever the count. Bucket names only grow (PENDING#00 ..
# PENDING#1023): an item keeps the bucket it was written with, which stays a bucket of the index.
PENDING_BUCKET_COUNT = 1024
PENDING_PROJECTED_ATTRIBUTES = ("counter_processed", "deleted")

# Sparse index of account and shard items by the time of their last API write, over fixed buckets:
# the sweeper finds accounts that went quiet without scanning, and heals their counters.
ACTIVITY_INDEX_NAME = "activity"
ACTIVITY_BUCKET_ATTRIBUTE = "activity_bucket"
# The activity index's sort key: an API write's time rounded up to the minute (healing.last_write_stamp),
# so a busy account's index entry moves once a minute. The exact time, for a heal's quiet check:
LAST_WRITE_ATTRIBUTE = "last_write_at"
LAST_WRITE_EXACT_ATTRIBUTE = "last_write_exact"
# 128 buckets: an entry moves at most once a minute, so they spread far more than the writes need.
ACTIVITY_BUCKET_COUNT = 128
ACTIVITY_PROJECTED_ATTRIBUTES = ("account_id", "healed_at")

# Environment variables every function reads at cold start.
ENV_TABLE_NAME = "TABLE_NAME"
# The sweeper's: how old pending work must be before it applies it, how long an account must be
# free of API writes before `admitted` is healed, and how far back to look for unhealed accounts.
ENV_SWEEP_PENDING_OLDER_THAN_SECONDS = "SWEEP_PENDING_OLDER_THAN_SECONDS"
ENV_HEAL_QUIET_SECONDS = "HEAL_QUIET_SECONDS"
ENV_HEAL_LOOKBACK_SECONDS = "HEAL_LOOKBACK_SECONDS"
# Writes a second on one admission shard before its account doubles its shards (the API's).
ENV_SHARD_GROW_AT = "SHARD_GROW_AT_WRITES_PER_SECOND"
# Requests a second of a tenant's rate per part of its rate window (the API's; 1,000 unless the
# partition limits are scaled).
ENV_RATE_WINDOW_PART_REQUESTS = "RATE_WINDOW_PART_REQUESTS_PER_SECOND"
# How long a tombstone is kept (the consumer's, the redrive's and the sweeper's).
ENV_TOMBSTONE_RETENTION_SECONDS = "TOMBSTONE_RETENTION_SECONDS"

# Resource attributes the counting flows depend on.
COUNTER_PROCESSED_ATTRIBUTE = "counter_processed"
DELETED_ATTRIBUTE = "deleted"
REQUEST_TOKEN_ATTRIBUTE = "request_token"  # noqa: S105 - an attribute name, not a secret
DELETE_TOKEN_ATTRIBUTE = "delete_token"  # noqa: S105

# A counted delete leaves a tombstone instead of nothing: the resource's key with its request and
# delete tokens and its request fingerprint, and neither `deleted` nor `counter_processed`, so no
# stream filter or index picks it up. A retried write finds its own token there; a late create
# finds the key taken. DynamoDB's TTL removes it after the retention (TTL deletes are free, and
# their REMOVE records match no filter pattern).
ITEM_TYPE_ATTRIBUTE = "type"
TOMBSTONE_TYPE = "tombstone"
EXPIRES_AT_ATTRIBUTE = "expires_at"  # epoch seconds: the table's TTL attribute

# Leases on an admission shard item (functions/core/leases.py): one attribute per write in flight,
# named by its request's token.
RESERVATION_LEASE_PREFIX = "lease_r_"
DELETION_LEASE_PREFIX = "lease_d_"

# Lambda event filter patterns (OR-ed) for the stream consumer: only resource records that still
# have counting work invoke it. The consumer checks the same conditions in code, because the
# redrive path re-reads raw stream ranges that no filter has seen.
STREAM_FILTER_PATTERNS: tuple[dict[str, object], ...] = (
    {
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {
            "Keys": {SORT_KEY: {"S": [{"prefix": RESOURCE_PREFIX}]}},
            "NewImage": {COUNTER_PROCESSED_ATTRIBUTE: {"BOOL": [False]}},
        },
    },
    {
        "eventName": ["INSERT", "MODIFY"],
        "dynamodb": {
            "Keys": {SORT_KEY: {"S": [{"prefix": RESOURCE_PREFIX}]}},
            "NewImage": {DELETED_ATTRIBUTE: {"BOOL": [True]}},
        },
    },
)
