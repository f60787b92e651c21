"""The lease codec: what an account item's attributes say about the writes in flight."""

from __future__ import annotations

from dataclasses import replace

from functions.adapters.account_item import LEASE_PREFIXES, holds, lease_attribute, lease_value, leases_of
from functions.core.leases import Lease, LeaseKind, Settlement, new_token, resolution, taken_before
from functions.core.model import Quota, Resource


def test_a_lease_round_trips_through_the_account_item() -> None:
    lease = Lease(LeaseKind.RESERVATION, new_token(), "r-1", "2026-11-23T08:00:00.000Z")
    item = {"limit": 5, "admitted": 1, lease_attribute(lease): lease_value(lease)}
    assert lease_attribute(lease).startswith(LEASE_PREFIXES[LeaseKind.RESERVATION])
    assert leases_of(item) == (lease,)
    assert holds(item, lease)
    assert not holds({}, lease)
    assert not holds(None, lease)


def test_leases_are_read_oldest_first_and_other_attributes_ignored() -> None:
    newer = Lease(LeaseKind.DELETION, "b" * 16, "r-2", "2026-11-23T08:00:02.000Z")
    older = Lease(LeaseKind.RESERVATION, "a" * 16, "r-1", "2026-11-23T08:00:01.000Z")
    item = {
        lease_attribute(newer): lease_value(newer),
        lease_attribute(older): lease_value(older),
        "lease_r_malformed": 7,  # not a lease value: ignored rather than misread
        "best_effort": 1,
    }
    assert leases_of(item) == (older, newer)
    assert taken_before(leases_of(item), "2026-11-23T08:00:02.000Z") == [older]


def test_tokens_are_short_and_distinct() -> None:
    tokens = {new_token() for _ in range(1000)}
    assert len(tokens) == 1000
    assert {len(token) for token in tokens} == {16}


def test_a_lease_of_one_unit_is_stored_as_before_amounts_and_one_of_more_says_its_units() -> None:
    one = Lease(LeaseKind.DELETION, "c" * 16, "r-1", "2026-11-23T08:00:00.000Z")
    many = Lease(LeaseKind.RESERVATION, "d" * 16, "r-2", "2026-11-23T08:00:01.000Z", shard=3, units=64)
    assert lease_value(one) == "r-1 2026-11-23T08:00:00.000Z"
    assert lease_value(many) == "r-2 2026-11-23T08:00:01.000Z 64"
    item = {lease_attribute(lease): lease_value(lease) for lease in (one, many)}
    assert leases_of(item, shard=3) == (replace(one, shard=3), many)


def test_a_dead_leases_resolution_moves_its_own_units() -> None:
    lease = Lease(LeaseKind.RESERVATION, "e" * 16, "r-1", "2026-11-23T08:00:00.000Z", units=7)
    assert resolution(lease, None, expired=False) == Settlement(admitted=-7)
    deletion = replace(lease, kind=LeaseKind.DELETION)
    live = Resource(Quota("acme"), "r-1", "x", {}, "t", "", "other", amount=7)
    assert resolution(deletion, live, expired=False) == Settlement(best_effort=+7)
    assert resolution(deletion, replace(live, deleted=True, delete_token=lease.token), expired=False) == Settlement(
        admitted=-7
    )


def test_a_resize_lease_says_the_version_it_changes() -> None:
    growth = Lease(LeaseKind.GROWTH, "f" * 16, "r-1", "2026-11-23T08:00:00.000Z", units=1, from_version=3)
    shrink = Lease(LeaseKind.SHRINK, "g" * 16, "r-1", "2026-11-23T08:00:01.000Z", units=40, from_version=1)
    assert lease_value(growth) == "r-1 2026-11-23T08:00:00.000Z 1 3"
    assert lease_attribute(shrink).startswith(LEASE_PREFIXES[LeaseKind.SHRINK])
    item = {lease_attribute(lease): lease_value(lease) for lease in (growth, shrink)}
    assert leases_of(item) == (growth, shrink)


def test_a_dead_resize_lease_is_settled_by_the_resources_version_and_its_last_resize() -> None:
    """Landed (the resource's last resize is the lease's): a growth's units are held, a shrink's are
    freed. Not landed (the resource is still at the version the lease changes): given back. Hidden
    by a later resize, or the item gone: forgotten on the safe side (units held, best-effort low)."""
    growth = Lease(LeaseKind.GROWTH, "h" * 16, "r-1", "2026-11-23T08:00:00.000Z", units=5, from_version=2)
    shrink = replace(growth, kind=LeaseKind.SHRINK)
    at = Resource(Quota("acme"), "r-1", "x", {}, "t", "", "create-token", amount=10, version=2)
    landed = replace(at, version=3, resize_token=growth.token)
    hidden = replace(at, version=4, resize_token="i" * 16)
    assert resolution(growth, landed, expired=False) == Settlement()
    assert resolution(shrink, landed, expired=False) == Settlement(admitted=-5)
    assert resolution(growth, at, expired=False) == Settlement(admitted=-5)
    assert resolution(shrink, at, expired=False) == Settlement(best_effort=+5)
    tombstone = replace(at, deleted=True, tombstone=True)  # deleted at the version read: never resized by it
    assert resolution(growth, tombstone, expired=False) == Settlement(admitted=-5)
    for unknown in (hidden, None):
        assert resolution(growth, unknown, expired=False) == Settlement()
        assert resolution(shrink, unknown, expired=False) == Settlement()
