"""The scaled-run variance model (benchmarks/scaled_variance.py) against what its buckets must do."""

from __future__ import annotations

import pytest

from benchmarks.scaled_variance import refusals


def test_writes_within_an_items_rate_are_never_refused() -> None:
    # One shard at 1/500 (2 write units a second, no burst): one iteration of one write a second.
    assert refusals(1.0, 1 / 500, 120, shards=1, burst=0, writes=1, spacing=0, seed=0) == 0


def test_writes_at_twice_an_items_rate_are_refused_about_half_the_time() -> None:
    # 4 writes a second against 2 a second: refused writes are not charged, so about half pass.
    refused = refusals(1.0, 1 / 500, 120, shards=1, burst=0, writes=4, spacing=0.01, seed=0)
    assert refused == pytest.approx(240, rel=0.1)


def test_a_burst_absorbs_what_a_cluster_of_iterations_adds() -> None:
    # 5 iterations' 20 writes within 50 ms on one shard: a 15 s burst (32 units) holds them; a
    # second's worth (2 units) does not.
    assert refusals(100.0, 1 / 500, 0.05, shards=1, burst=15, writes=4, spacing=0.001, seed=0) == 0
    assert refusals(100.0, 1 / 500, 0.05, shards=1, burst=0, writes=4, spacing=0.001, seed=0) >= 17
