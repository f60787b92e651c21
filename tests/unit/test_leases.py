"""The lease codec: what an account item's attributes say about the writes in flight."""

from __future__ import annotations

from functions.adapters.account_item import LEASE_PREFIXES, holds, lease_attribute, lease_value, leases_of
from functions.core.leases import Lease, LeaseKind, new_token, taken_before


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
