"""The key layout (functions/adapters/keys.py): a quota's keys are built from the Quota, the default
type's are the keys a deployed table already holds, another type's put `<account>#<type>` where the
account id was, and every key parses back to its quota."""

from __future__ import annotations

import hashlib
import uuid

import pytest

from functions.adapters import keys
from functions.adapters.counters import counter_key
from functions.adapters.resources import resource_key
from functions.adapters.shards import shard_key
from functions.core.model import Quota, idempotent_resource_id

ACME = Quota("acme")
SEATS = Quota("acme", "seats")
# The namespace the default type's ids were always derived in (functions/core/model.py).
IDEMPOTENT_NAMESPACE = uuid.UUID("6f3c5d1e-2a4b-4c8d-9e0f-1a2b3c4d5e6f")


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
    # The type spelled out is the default type itself, with the same keys.
    assert Quota("acme", "default") == ACME


def test_another_types_keys_put_account_and_type_where_the_account_was() -> None:
    assert shard_key(SEATS, 0) == {"pk": {"S": "ACCOUNT#acme#seats"}, "sk": {"S": "ACCOUNT"}}
    assert shard_key(SEATS, 1) == {"pk": {"S": "SHARD#acme#seats#01"}, "sk": {"S": "SHARD"}}
    assert counter_key(SEATS) == {"pk": {"S": "ACCOUNT#acme#seats"}, "sk": {"S": "COUNTER"}}
    assert counter_key(SEATS, 3) == {"pk": {"S": "COUNTER#acme#seats#3"}, "sk": {"S": "COUNTER"}}
    assert resource_key(SEATS, "r1") == {"pk": {"S": "ACCOUNT#acme#seats"}, "sk": {"S": "RESOURCE#r1"}}
    assert keys.pending_bucket(SEATS, "r1") == f"PENDING#{bucket('acme#seats/r1', 1024):02d}"
    assert keys.activity_bucket(SEATS) == f"ACTIVITY#{bucket('acme#seats', 128):02d}"
    assert keys.activity_bucket(SEATS, 2) == f"ACTIVITY#{bucket('acme#seats#2', 128):02d}"


def test_each_type_has_partition_keys_of_its_own() -> None:
    """A busy type's writes never land on a sibling's partition keys, nor on the default type's."""
    quotas = [ACME, SEATS, Quota("acme", "projects")]
    for build in (keys.account_pk, lambda quota: keys.shard_pk(quota, 1), lambda quota: keys.counter_pk(quota, 1)):
        assert len({build(quota) for quota in quotas}) == len(quotas)


@pytest.mark.parametrize("resource_type", ["Seats", "1seats", "seats#x", "seats/x", "", "a" * 33, "sea ts"])
def test_a_type_outside_the_pattern_has_no_keys(resource_type: str) -> None:
    """A `#` would forge another quota's keys; the API refuses these names before any key is built."""
    with pytest.raises(ValueError, match="resource type"):
        keys.account_pk(Quota("acme", resource_type))


@pytest.mark.parametrize(
    ("pk", "quota"),
    [
        ("ACCOUNT#acme", ACME),
        ("SHARD#acme#07", ACME),
        ("COUNTER#acme#3", ACME),
        ("ACCOUNT#acme#seats", SEATS),
        ("SHARD#acme#seats#07", SEATS),
        ("COUNTER#acme#seats#3", SEATS),
        ("ACCOUNT#acme#a-1", Quota("acme", "a-1")),
        ("RATE#acme#2000#1", None),
        ("ACCOUNT#", None),
        ("ACCOUNT#acme#", None),
        ("ACCOUNT#acme#default", None),  # the default type's keys never name it
        ("ACCOUNT#acme#Seats", None),
        ("ACCOUNT#acme#seats#x", None),
        ("SHARD#acme", None),
        ("SHARD#acme#seats", None),
        ("SHARD#acme#seats#x#01", None),
        ("COUNTER#acme#default#3", None),
        ("PENDING#12", None),
    ],
)
def test_a_quotas_partition_keys_parse_back_to_it(pk: str, quota: Quota | None) -> None:
    assert keys.quota_of(pk) == quota


def test_the_default_types_idempotent_ids_are_as_they_were() -> None:
    """A retry that spans the upgrade names the same resource."""
    assert idempotent_resource_id(ACME, "k1") == str(uuid.uuid5(IDEMPOTENT_NAMESPACE, "acme\nk1"))


def test_the_same_key_on_two_types_names_two_resources() -> None:
    ids = {idempotent_resource_id(quota, "k1") for quota in (ACME, SEATS, Quota("acme", "projects"))}
    assert len(ids) == 3
    assert idempotent_resource_id(SEATS, "k1") == str(uuid.uuid5(IDEMPOTENT_NAMESPACE, "acme\nseats\nk1"))


def test_a_previous_release_reads_a_types_keys_as_those_of_an_account_named_with_a_hash() -> None:
    """The previous release built every key from the account id as the default type's are built
    today (above), and parsed `ACCOUNT#acme#seats` as account `acme#seats`: every key of a type is
    the key it would build for that account, so its consumer, redrive and sweeper count and heal a
    type's items correctly while a deploy or a rollback runs (docs/upgrade.md)."""
    as_an_account = Quota("acme#seats")
    assert keys.account_pk(SEATS) == keys.account_pk(as_an_account)
    for shard in (1, 7):
        assert keys.shard_pk(SEATS, shard) == keys.shard_pk(as_an_account, shard)
        assert keys.counter_pk(SEATS, shard) == keys.counter_pk(as_an_account, shard)
    assert keys.pending_bucket(SEATS, "r1") == keys.pending_bucket(as_an_account, "r1")
    for shard in (0, 3):
        assert keys.activity_bucket(SEATS, shard) == keys.activity_bucket(as_an_account, shard)
