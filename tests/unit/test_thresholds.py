"""Usage thresholds: their boundaries, the headroom a counter carries, and the crossings a decision
finds (functions/core/thresholds.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from functions.core.model import Quota
from functions.core.thresholds import (
    DEFAULT_THRESHOLDS,
    UNBOUNDED,
    Bands,
    CounterShard,
    Direction,
    decide,
    thresholds_or_default,
)

ACME = Quota("acme")


def test_the_default_thresholds_are_80_and_100_percent() -> None:
    assert DEFAULT_THRESHOLDS == (80, 100)
    assert thresholds_or_default(None) == (80, 100)
    assert thresholds_or_default([100, 50, 50]) == (50, 100)


@pytest.mark.parametrize(
    ("limit", "threshold", "boundary"),
    [(100, 80, 80), (5, 80, 4), (3, 80, 3), (7, 80, 6), (5000, 80, 4000), (5, 100, 5), (0, 80, 0), (1, 1, 1)],
)
def test_a_boundary_is_the_least_usage_at_or_above_the_percentage(limit: int, threshold: int, boundary: int) -> None:
    """ceil(limit * p / 100), in whole numbers (3 * 0.8 = 2.4: 3 is the first usage at or above 80%)."""
    assert Bands(limit, (threshold,)).boundary(threshold) == boundary


@pytest.mark.parametrize(
    ("usage", "up", "down"),
    [(0, 80, UNBOUNDED), (79, 1, UNBOUNDED), (80, 20, 0), (99, 1, 19), (100, UNBOUNDED, 0), (130, UNBOUNDED, 30)],
)
def test_headroom_is_the_distance_to_the_next_boundary_each_way(usage: int, up: int, down: int) -> None:
    assert Bands(100, DEFAULT_THRESHOLDS).headroom(usage) == (up, down)


def one_shard(count: int, **extra: object) -> list[CounterShard]:
    return [CounterShard(0, count, **extra)]  # type: ignore[arg-type]


def test_crossings_of_79_81_79_81_are_up_down_up_each_once() -> None:
    bands = Bands(100, DEFAULT_THRESHOLDS)
    seen, usage, directions = one_shard(79), 79, []
    for target in (81, 79, 81):
        decision = decide(ACME, bands, seen, 0, target - usage)
        directions += [(crossing.threshold, crossing.direction) for crossing in decision.crossings]
        written = decision.writes[0]
        seen = [CounterShard(0, written.count, written.up_room, written.down_room, decision.seq, decision.above)]
        usage = target
    assert directions == [(80, Direction.UP), (80, Direction.DOWN), (80, Direction.UP)]
    assert decision.seq == 3


def test_a_batch_through_several_boundaries_crosses_each_in_the_order_passed() -> None:
    bands = Bands(5, DEFAULT_THRESHOLDS)  # boundaries 4 and 5
    up = decide(ACME, bands, one_shard(0), 0, 5)
    assert [(c.threshold, c.direction, c.seq, c.usage, c.limit) for c in up.crossings] == [
        (80, Direction.UP, 1, 5, 5),
        (100, Direction.UP, 2, 5, 5),
    ]
    down = decide(ACME, bands, one_shard(5, seq=2, above=frozenset({80, 100})), 0, -5)
    assert [(c.threshold, c.direction, c.seq) for c in down.crossings] == [
        (100, Direction.DOWN, 3),
        (80, Direction.DOWN, 4),
    ]
    assert down.above == frozenset()


def test_a_counter_without_announced_state_is_taken_as_its_count_says() -> None:
    """A counter written before events (or new) announced nothing: what its count is above is
    taken as known, so an upgrade emits no event for the past."""
    decision = decide(ACME, Bands(100, DEFAULT_THRESHOLDS), one_shard(85), 0, 1)
    assert decision.crossings == ()
    assert decision.above == frozenset({80})


def test_announced_state_that_disagrees_with_the_count_is_crossed_back_to_the_truth() -> None:
    """The counter moved without a decision (an operator's repair): the next decision tells
    subscribers what changed, so their state ends as the counter's."""
    decision = decide(ACME, Bands(100, DEFAULT_THRESHOLDS), one_shard(70, above=frozenset({80})), 0, 1)
    assert [(c.threshold, c.direction) for c in decision.crossings] == [(80, Direction.DOWN)]


def test_new_thresholds_are_crossed_from_what_was_announced_and_a_removed_one_down() -> None:
    """The quota's thresholds changed from 80 and 100 to 50 and 70 at usage 9 of 10, 80 announced:
    the walk to the new truth crosses 50 and 70 up, and 80 (no longer one of them) down."""
    decision = decide(ACME, Bands(10, (50, 70)), one_shard(9, seq=1, above=frozenset({80})), 0, 0)
    assert [(c.threshold, c.direction, c.seq, c.usage) for c in decision.crossings] == [
        (50, Direction.UP, 2, 9),
        (70, Direction.UP, 3, 9),
        (80, Direction.DOWN, 4, 9),
    ]
    assert decision.above == frozenset({50, 70})
    assert (decision.writes[0].up_room, decision.writes[0].down_room) == (UNBOUNDED, 2)


def test_a_decision_conditions_on_what_it_read_and_bumps_the_version() -> None:
    decision = decide(ACME, Bands(100, DEFAULT_THRESHOLDS), one_shard(10, version=4), 0, 3)
    [write] = decision.writes
    assert (write.read.count, write.read.version, write.count) == (10, 4, 13)
    assert decision.version == 5
    assert (write.up_room, write.down_room) == (67, UNBOUNDED)


def test_headroom_is_spread_over_every_counter_shard_and_sums_to_the_quotas() -> None:
    shards = [CounterShard(shard, count=10) for shard in range(8)]  # 80 in all
    decision = decide(ACME, Bands(1000, DEFAULT_THRESHOLDS), shards, 3, 5)  # 85: 715 to 800
    assert sum(write.count for write in decision.writes) == 85
    assert sum(write.up_room for write in decision.writes) == 715
    assert {write.down_room for write in decision.writes} == {UNBOUNDED}
    by_shard = {write.read.shard: write for write in decision.writes}
    assert by_shard[3].count == 15
    assert max(w.up_room for w in decision.writes) - min(w.up_room for w in decision.writes) <= 1
    assert by_shard[3].up_room == max(w.up_room for w in decision.writes)  # the shard that ran out first


def test_the_event_id_is_the_same_for_the_same_crossing_and_differs_otherwise() -> None:
    first = decide(ACME, Bands(100, DEFAULT_THRESHOLDS), one_shard(79), 0, 1).crossings[0]
    again = decide(ACME, Bands(100, DEFAULT_THRESHOLDS), one_shard(79), 0, 1).crossings[0]
    other = decide(Quota("globex"), Bands(100, DEFAULT_THRESHOLDS), one_shard(79), 0, 1).crossings[0]
    later = decide(ACME, Bands(100, DEFAULT_THRESHOLDS), one_shard(79, seq=1), 0, 1).crossings[0]
    assert first.event_id == again.event_id
    assert len({first.event_id, other.event_id, later.event_id}) == 3


@given(
    limit=st.integers(0, 60),
    thresholds=st.lists(st.integers(1, 150), min_size=1, max_size=4),
    deltas=st.lists(st.integers(-7, 7).filter(bool), min_size=1, max_size=30),
)
def test_decisions_and_headroom_agree_with_the_count_crossing_boundaries(
    limit: int, thresholds: list[int], deltas: list[int]
) -> None:
    """Over any walk of the count, with a decision only where the fast path's condition fails:
    every crossing of a boundary is found once, in order, with gap-free sequence numbers, and a
    batch the headroom lets through never crosses one."""
    bands = Bands(limit, thresholds_or_default(thresholds))
    shard = CounterShard(0, 0)
    found: list[tuple[int, Direction]] = []
    expected: list[tuple[int, Direction]] = []
    count = 0
    for delta in deltas:
        delta = max(delta, -count)  # the count never goes below 0
        if not delta:
            continue
        new = count + delta
        for p in sorted(bands.thresholds, reverse=delta < 0):
            b = bands.boundary(p)
            if count < b <= new:
                expected.append((p, Direction.UP))
            if new < b <= count:
                expected.append((p, Direction.DOWN))
        passes = (
            shard.up_room is not None
            and shard.down_room is not None
            and (shard.up_room > delta if delta > 0 else shard.down_room >= -delta)
        )
        if passes:
            assert shard.up_room is not None
            assert shard.down_room is not None
            shard = CounterShard(0, new, shard.up_room - delta, shard.down_room + delta, shard.seq, shard.above)
        else:
            decision = decide(ACME, bands, [shard], 0, delta)
            found += [(c.threshold, c.direction) for c in decision.crossings]
            assert [c.seq for c in decision.crossings] == list(range(shard.seq + 1, decision.seq + 1))
            write = decision.writes[0]
            shard = CounterShard(0, write.count, write.up_room, write.down_room, decision.seq, decision.above)
        count = new
    assert found == expected
