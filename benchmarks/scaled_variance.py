"""How many refusals chance alone gives a scaled load run: `python -m benchmarks.scaled_variance`.

Under scaled partition limits (`make bench-load ARGS='--partition-limits 1/500'`) an item gets that
share of 1,000 WCU/s, and a busy account's 63 admission shards take the load's iterations at
random. At 10,000 iterations/s each shard takes about 159 a second, and what one takes in a second
varies by about 8% (Poisson); scaled to 20/s a shard takes one iteration every 3 s, and a few
seconds can hold several times that. This replays only that: iterations arriving at the offered
rate, evenly spaced as `make bench-load` offers them, each writing one random shard `--writes` times
a few milliseconds apart (a create's reservation and count, a delete's take and release; 1 WCU each, the item under
1 KB), against the emulator's own token buckets (local/capacity/limits.py) on a simulated clock. It
counts the writes a bucket refuses, for the scaled run and for the full rate it stands for.

Nothing else of the system is modelled (no retries, no latency, no other items, the account's 63
shards open from the start): a guide to what chance alone gives, not a prediction of a run.
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
from fractions import Fraction

from local.capacity.limits import WRITE, PartitionLimits


class SimulatedClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def refusals(
    rate: float, factor: float, seconds: float, shards: int, burst: float, writes: int, spacing: float, seed: int
) -> int:
    """Shard writes refused in one replay of `seconds` at `rate` iterations a second."""
    rng = random.Random(seed)  # noqa: S311 - a simulation, not a secret
    clock = SimulatedClock()
    limits = PartitionLimits(factor, burst_seconds=burst, clock=clock)
    pending: list[tuple[float, int]] = []  # (when, shard) of the writes to come, soonest first
    arrival = 0.0
    refused = 0
    while arrival < seconds or pending:
        if pending and (pending[0][0] <= arrival or arrival >= seconds):
            clock.now, shard = heapq.heappop(pending)
            place = f"shard {shard}"
            if limits.exhausted(WRITE, [place]) is not None:
                refused += 1
            else:
                limits.charge(WRITE, place, 1.0)
            continue
        shard = rng.randrange(1, shards + 1)
        for write in range(writes):
            heapq.heappush(pending, (arrival + write * spacing, shard))
        arrival += 1 / rate
    return refused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaled_variance", description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=20.0, help="offered iterations a second of the scaled run")
    parser.add_argument("--partition-limits", default="1/500", help="the scaled run's factor")
    parser.add_argument("--seconds", type=float, default=240.0, help="warm-up and load of the scaled run")
    parser.add_argument("--full-seconds", type=float, default=30.0, help="the full-rate replay's length")
    parser.add_argument("--shards", type=int, default=63, help="shards that admit (all but shard 0)")
    parser.add_argument("--burst-seconds", type=float, default=15.0)
    parser.add_argument("--writes", type=int, default=4, help="writes on the admitting shard per iteration")
    parser.add_argument("--spacing-ms", type=float, default=20.0, help="between an iteration's writes")
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args(argv)
    factor = float(Fraction(args.partition_limits))
    common = (args.shards, args.burst_seconds, args.writes, args.spacing_ms / 1000)
    scaled = [refusals(args.rate, factor, args.seconds, *common, seed) for seed in range(args.trials)]
    full_rate = args.rate / factor
    full = refusals(full_rate, 1.0, args.full_seconds, *common, seed=0)
    per_shard = args.rate * args.writes / args.shards / (1000 * factor)
    print(
        f"{args.rate:g} iterations/s over {args.shards} shards at partition limits x{args.partition_limits}, "
        f"burst {args.burst_seconds:g} s, {args.writes} writes an iteration: each shard at {per_shard:.0%} of its "
        f"item's write units on average"
    )
    print(
        f"  refused by chance in {args.seconds:g} s, {args.trials} replays: median {statistics.median(scaled):g}, "
        f"mean {statistics.fmean(scaled):.1f}, min {min(scaled)}, max {max(scaled)}"
    )
    print(f"  the rate it stands for, {full_rate:,.0f}/s at full limits, {args.full_seconds:g} s: {full} refused")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
