"""The key layout (functions/adapters/keys.py): a quota's keys are built from the Quota, the default
type's are the keys a deployed table already holds, and a key parses back to its quota."""

from __future__ import annotations

import hashlib

import pytest

from functions.adapters import keys
from functions.adapters.counters import counter_key
from functions.adapters.resources import resource_key
from functions.adapters.shards import shard_key
from functions.core.model import Quota, idempotent_resource_id

ACME = Quota("acme")
SEATS = Quota("acme", "seats")


def bucket(text: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % count


def test_the_default_types_keys_are_the_tables_keys() -> None:
    assert shard_key(ACME, 0) == {"pk": {"S": "ACCOUNT#acme"}, "sk": {"S": "ACCOUNT"}}
    assert shard_key(ACME, 1) == {"pk": {"S": "SHARD#acme#01"}, "sk": {"S": "SHARD"}}
    assert counter_key(ACME) == {"pk": {"S": "ACCOUNT#acme"}, "sk": {"S": "COUNTER"}}
    assert counter_key(ACME, 3) == {"pk": {"S": "COUNTER#acme#3"}, "sk": {"S": "COUNTER"}}
    assert resource_key(ACME, "r1") == {"pk": {"S": "ACCOUNT#acme"}, "sk": {"S": "RESOURCE#r1"}}
    assert keys.pending_bucket(ACME, "r1") == f"PENDING#{bucket('acme/r1', 1024):02d}"
    assert keys.activity_bucket(ACME) == f"ACTIVITY#{bucket('acme', 128):02d}"
    assert keys.activity_bucket(ACME, 2) == f"ACTIVITY#{bucket('acme#2', 128):02d}"


@pytest.mark.parametrize(
    "build",
    [
        lambda: keys.account_pk(SEATS),
        lambda: keys.shard_pk(SEATS, 1),
        lambda: keys.counter_pk(SEATS, 1),
        lambda: keys.pending_bucket(SEATS, "r1"),
        lambda: keys.activity_bucket(SEATS),
        lambda: idempotent_resource_id(SEATS, "k1"),
    ],
)
def test_a_type_other_than_the_default_has_no_keys_yet(build: object) -> None:
    with pytest.raises(NotImplementedError, match="issue 29"):
        build()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("pk", "quota"),
    [
        ("ACCOUNT#acme", ACME),
        ("SHARD#acme#07", ACME),
        ("COUNTER#acme#3", ACME),
        ("RATE#acme#2000#1", None),
        ("ACCOUNT#", None),
        ("SHARD#acme", None),
        ("PENDING#12", None),
    ],
)
def test_a_quotas_partition_keys_parse_back_to_it(pk: str, quota: Quota | None) -> None:
    assert keys.quota_of(pk) == quota
