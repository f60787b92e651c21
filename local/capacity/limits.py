"""DynamoDB's partition limits, scaled, for the embedded emulator: `--partition-limits 1/100`.

On AWS a partition serves at most 3,000 read units and 1,000 write units a second ("Partitions and
data distribution", "Burst and adaptive capacity" in the DynamoDB developer guide); an item is
never split across partitions, so one item can never take more, whatever the table's mode. A
partition key's items share a partition until DynamoDB splits it for heat, which it may or may not
do; a global secondary index has partitions of its own, and "if a global secondary index has
insufficient write capacity, writes to the base table are throttled" (its writes are part of the
table write). DynamoDB also keeps up to 300 seconds of unused capacity for bursts.

This module keeps one token bucket per item and per index partition key (local/partition_throttling.py
says why a table's partition key has none),
at those rates times a factor, with a configurable burst (the AWS default of 300 s, off in tests
so that a short run cannot hide behind it). A request is refused, before it runs, when a bucket it
needs is empty; after it runs it is charged what DynamoDB bills (local/capacity/billing.py). A
bucket may go below zero by one request's cost, which the next requests then wait out: DynamoDB
too admits a request first and bills it after.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

AWS_WRITE_UNITS_PER_SECOND = 1000.0
AWS_READ_UNITS_PER_SECOND = 3000.0
AWS_BURST_SECONDS = 300.0

WRITE, READ = "write", "read"


def parse_factor(text: str) -> float:
    """'1/100' or '0.01' -> 0.01; the factor must be in (0, 1]."""
    factor = float(Fraction(text))
    if not 0 < factor <= 1:
        raise ValueError(f"partition limit factor must be in (0, 1], got {text!r}")
    return factor


@dataclass
class Bucket:
    rate: float  # units a second
    capacity: float  # the most it holds: a second of rate plus the burst
    tokens: float
    updated: float

    def refill(self, now: float) -> float:
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        return self.tokens


@dataclass
class PartitionLimits:
    factor: float
    burst_seconds: float = AWS_BURST_SECONDS
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[tuple[str, str], Bucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    throttled: dict[str, int] = field(default_factory=dict)  # "read|write <place>" -> refusals, for reports

    def _bucket(self, kind: str, place: str, now: float) -> Bucket:
        bucket = self._buckets.get((kind, place))
        if bucket is None:
            rate = (AWS_WRITE_UNITS_PER_SECOND if kind == WRITE else AWS_READ_UNITS_PER_SECOND) * self.factor
            capacity = rate * (1 + self.burst_seconds)
            bucket = self._buckets[(kind, place)] = Bucket(rate, capacity, capacity, now)
        return bucket

    def exhausted(self, kind: str, places: list[str]) -> str | None:
        """The first of `places` with nothing left for `kind`, counted as a refusal; else None."""
        now = self.clock()
        with self._lock:
            for place in places:
                if self._bucket(kind, place, now).refill(now) <= 0:
                    refused = f"{kind} {place}"
                    self.throttled[refused] = self.throttled.get(refused, 0) + 1
                    return place
        return None

    def charge(self, kind: str, place: str, units: float) -> None:
        now = self.clock()
        with self._lock:
            bucket = self._bucket(kind, place, now)
            bucket.refill(now)
            bucket.tokens -= units


def item_place(table: str, partition: str, sort: str | None) -> str:
    return f"item {table} / {partition}" + (f" / {sort}" if sort is not None else "")


def item_of_place(place: str) -> tuple[str, str, str | None] | None:
    """The table, partition key and sort key of an item's place (item_place, after the "read " or
    "write " a refusal is counted under); None for an index key's place."""
    kind, _, rest = place.partition(" ")
    if kind in (READ, WRITE):
        place = rest
    if not place.startswith("item "):
        return None
    table, partition, *sort = place.removeprefix("item ").split(" / ")
    return table, partition, sort[0] if sort else None


def index_place(table: str, index: str, partition: str) -> str:
    return f"index partition key {table} index {index} / {partition}"
