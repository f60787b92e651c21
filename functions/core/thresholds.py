"""Usage thresholds: when a quota's exact (eventual) usage crosses a percentage of its limit.

A quota's thresholds are percentages of its limit: its own, set by its PUT, or 80 and 100 (the
defaults). Threshold p's boundary is the least usage at or above p% of the limit,
ceil(limit * p / 100); usage *crosses p up* when it goes from below the boundary to at or above it,
and *down* the other way. 79% -> 81% -> 79% -> 81% is three crossings: up, down, up.

The counter that knows the usage exactly is the eventual counter, and only its transactions move
it (functions/core/counting.py). So each counter shard item carries its *headroom*: `up_room`, how
far its count may rise, and `down_room`, how far it may fall, before the quota's usage could reach
a boundary. The consumer's usual transaction adds its batch's change to both (`up_room - d`,
`down_room + d`) with the count, on condition that the room is there: a batch that crosses nothing
costs no call and no item more than before. A counter whose room does not suffice (or that has
none yet) fails that condition, and the consumer *decides* instead (`decide`): from the exact
usage, it finds the crossings, numbers them, and sets new headroom, all written in one transaction
conditional on what it read.

A busy quota counts on several counter shards, read as their sum: its headroom is spread over
them (each shard's room is a share, as admission room is, functions/core/admission.py), and a
decision reads and writes every shard, so a crossing is decided only where the total is known.

Subscribers' state is the counter's: shard 0 keeps the thresholds its usage was last decided to be
at or above (`above`), and each decision crosses from that to what the usage is now. So each
threshold's crossings alternate up and down, a count moved without a decision (an operator's
repair) is crossed back to the truth by the next decision, and a threshold announced above that
the quota no longer has (its thresholds changed) is crossed down, whatever the usage.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from functions.core.model import Quota

DEFAULT_THRESHOLDS = (80, 100)
# A quota's thresholds fit in a decision's transaction beside its actions and counter shards.
MAX_THRESHOLDS = 10
# Headroom towards no boundary at all (above the highest, or below the lowest): never runs out.
UNBOUNDED = 10**18

# Namespace of the event ids: an id names one crossing of one quota (Crossing.event_id).
_EVENT_ID_NAMESPACE = uuid.UUID("0b5c8f62-3e0e-4f43-9d1e-5a7c2b9e4d18")


def thresholds_or_default(configured: Iterable[int] | None) -> tuple[int, ...]:
    """A quota's thresholds, ascending and each once: its own when it has them, else the defaults.
    The one place a quota's thresholds are read from (per-quota thresholds feed it)."""
    return DEFAULT_THRESHOLDS if configured is None else tuple(sorted(set(configured)))


def limit_change_id(quota: Quota, limit_version: int) -> str:
    """The stable id of the change that gave a quota its `limit_version`: one PUT's change, once."""
    name = "\n".join(map(str, (quota.account_id, quota.resource_type, "limit", limit_version)))
    return str(uuid.uuid5(_EVENT_ID_NAMESPACE, name))


class Direction(enum.Enum):
    UP = "up"
    DOWN = "down"


@dataclass(frozen=True)
class Bands:
    """A quota's limit and thresholds (percentages, ascending), and the boundaries they make."""

    limit: int
    thresholds: tuple[int, ...]

    def boundary(self, threshold: int) -> int:
        """The least usage at or above `threshold`% of the limit: ceil(limit * threshold / 100)."""
        return -(-self.limit * threshold // 100)

    def above(self, usage: int) -> frozenset[int]:
        """The thresholds that `usage` is at or above."""
        return frozenset(p for p in self.thresholds if usage >= self.boundary(p))

    def headroom(self, usage: int) -> tuple[int, int]:
        """How far `usage` may rise, and fall, without crossing a threshold: the next boundary
        above it less it, and it less the boundary at or below it (UNBOUNDED when there is none)."""
        boundaries = [self.boundary(p) for p in self.thresholds]
        up = min((b for b in boundaries if b > usage), default=None)
        down = max((b for b in boundaries if b <= usage), default=None)
        return (UNBOUNDED if up is None else up - usage), (UNBOUNDED if down is None else usage - down)


@dataclass(frozen=True)
class CounterShard:
    """An eventual counter shard as read. `up_room` and `down_room` are None on a shard with no
    headroom (a new one, or one written before events). Shard 0 also holds the quota's last
    event `seq`, the thresholds its usage was last decided to be at or above (`above`; None:
    never decided) and the `version` each decision bumps."""

    shard: int
    count: int = 0
    up_room: int | None = None
    down_room: int | None = None
    seq: int = 0
    above: frozenset[int] | None = None
    version: int = 0
    exists: bool = True


@dataclass(frozen=True)
class Crossing:
    """One threshold crossed by one quota's usage: the `seq`-th event of the quota."""

    quota: Quota
    seq: int
    threshold: int
    direction: Direction
    usage: int
    limit: int

    @property
    def event_id(self) -> str:
        """Stable: the same crossing always has the same id, so a subscriber can drop the copies
        that at-least-once delivery may bring; a different crossing (another quota, seq, usage...)
        has another, as has the same crossing in another period of a periodic quota (a holding's
        ids are what they were before periods)."""
        fields = (self.quota.account_id, self.quota.resource_type, self.seq, self.threshold, self.direction.value)
        period = (self.quota.period,) if self.quota.period else ()
        name = "\n".join(map(str, (*fields, self.usage, self.limit, *period)))
        return str(uuid.uuid5(_EVENT_ID_NAMESPACE, name))


@dataclass(frozen=True)
class CounterWrite:
    """A decision's write of one counter shard: its new count and headroom, conditional on the
    shard being as `read`."""

    read: CounterShard
    count: int
    up_room: int
    down_room: int


@dataclass(frozen=True)
class Decision:
    """What one decision writes: every counter shard it read (shard 0 first) and the crossings,
    with shard 0's new `seq`, `above` and `version`."""

    writes: tuple[CounterWrite, ...]
    crossings: tuple[Crossing, ...]
    seq: int
    above: frozenset[int]
    version: int


def decide(quota: Quota, bands: Bands, shards: Sequence[CounterShard], target: int, delta: int) -> Decision:
    """Apply `delta` to counter shard `target` of a quota whose counter shards are `shards` (every
    one it may have, shard 0 first, as read): the crossings from what was last decided to the new
    usage, in the order the usage passes them, and the new headroom spread over the shards."""
    first = shards[0]
    usage = sum(shard.count for shard in shards) + delta
    announced = bands.above(usage - delta) if first.above is None else first.above
    now_above = bands.above(usage)
    passed = [(p, Direction.UP) for p in sorted(now_above - announced)]
    passed += [(p, Direction.DOWN) for p in sorted(announced - now_above, reverse=True)]
    crossings = tuple(
        Crossing(quota, first.seq + number, threshold, direction, usage, bands.limit)
        for number, (threshold, direction) in enumerate(passed, start=1)
    )
    up, down = bands.headroom(usage)
    order = [shard.shard for shard in shards]
    ups, downs = _spread(up, order, target), _spread(down, order, target)
    writes = tuple(
        CounterWrite(shard, shard.count + (delta if shard.shard == target else 0), ups[shard.shard], downs[shard.shard])
        for shard in shards
    )
    return Decision(writes, crossings, first.seq + len(crossings), now_above, first.version + 1)


def _spread(room: int, shards: list[int], first: int) -> dict[int, int]:
    """`room` in shares, one per shard, that add up to it (UNBOUNDED stays whole on each): equal
    to within one, the larger shares from shard `first` on (it is the one that ran out)."""
    if room >= UNBOUNDED:
        return dict.fromkeys(shards, UNBOUNDED)
    share, extra = divmod(room, len(shards))
    start = shards.index(first) if first in shards else 0
    rotated = shards[start:] + shards[:start]
    return {shard: share + (position < extra) for position, shard in enumerate(rotated)}
