"""What a usage record of a periodic quota costs DynamoDB (docs/periods.md), beside two baselines
measured in the same run: `make bench-capacity` (or `ARGS='--period day'` for this report alone).

Runs the real flows (functions.core with the real adapters) against the emulator with the capacity
meter (benchmarks/capacity_meter.py) on the client, on a simulated clock within one period:

* **quiet**: one periodic quota, each record counted alone by the stream consumer (a trickle);
* **busy**: one periodic quota at a projected `--rate` records a second: its period's admission
  shards grow as they would at that rate, its records are counted in batches of `--batch`;
* **a process's first create** on a quota it has not met (its holding write refused: it learns
  the period) and **a period's first create** (its shard 0 opened), each apart;
* **baselines**, each a record on a counter item per period: (1) an atomic counter, `UpdateItem
  ADD #count :n` with no condition (no limit, and a retried write that landed counts twice); (2) an
  exact transaction with a marker item per record, `TransactWriteItems` of a Put of the marker
  (`attribute_not_exists`) and an Update of the counter within the limit. DynamoDB conditions
  cannot add, so `count + n <= limit` is `#count <= :ceiling` with `:ceiling = limit - n`.

Per record: calls, WCU and RCU, the consumer's share included; the hottest item and partition
key, and the records a second at which they reach a partition's 1,000 WCU/s; for the busy quota
what each of its writes costs and what it buys. Prints figures and asserts none;
tests/handler/test_capacity_meter.py checks that the meter sees every write it makes.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.capacity_meter import Billed, CapacityMeter, Usage
from functions.core.leases import iso_timestamp
from functions.core.model import Quota
from functions.core.periods import Period, PeriodKind
from functions.shared.clock import Clock

PARTITION_WCU_PER_SECOND = 1000.0
GOAL_RECORDS_PER_SECOND = 10_000  # issue 39: one busy periodic quota, projected for AWS
LIMIT = 1_000_000_000  # a period's limit no run reaches
# How long the busy quota's shards' rate measurement looks, on the simulated clock (as benchmarks/
# capacity.py's SIMULATED_WINDOW): short, so a few hundred records show a busy quota's growth.
SIMULATED_WINDOW = 0.005

# The operations the report measures, as the meter names them.
QUIET_CREATE, QUIET_COUNT = "quiet record: create", "quiet record: the consumer's count"
BUSY_CREATE, BUSY_COUNT = "busy record: create", "busy record: the consumer's batches"
FIRST_OF_PROCESS, FIRST_OF_PROCESS_COUNT = "a process's first create", "a process's first create: its count"
OPEN, OPEN_COUNT = "a period's first create (the open)", "a period's first create: its count"
ATOMIC, MARKER = "baseline 1: atomic ADD", "baseline 2: transaction + marker"


class PeriodClock(Clock):
    """A clock the flows, the consumer and the shards' rate measurement share: `now()` and `text()`
    for the flows (functions.shared.clock.Clock, ISO text), and seconds since its start when called
    (the Directory's clock), moved by the run, never by the wall clock."""

    def __init__(self, start: datetime) -> None:
        self._start = start
        self.elapsed = 0.0

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self.elapsed)

    def text(self) -> str:
        return iso_timestamp(self.now())

    def __call__(self) -> float:
        return self.elapsed

    def advance(self, seconds: float) -> None:
        self.elapsed += seconds

    def move_to(self, instant: datetime) -> None:
        self.elapsed = (instant - self._start).total_seconds()


@dataclass
class PeriodicSettings:
    kind: PeriodKind = PeriodKind.DAY
    records: int = 20  # quiet records measured, and of each baseline
    hot_records: int = 200  # busy records measured, after the warm-up
    warmup: int = 600  # busy records before the meter starts (its shards grow)
    batch: int = 100  # records per consumer batch for the busy quota
    rate: float = 10_000  # the busy quota's projected records a second
    amount: int = 1  # units each record counts
    start: datetime | None = None  # the run's first instant; None: the wall clock's current period


@dataclass
class PeriodicRun:
    """What `measure_periodic` measured: the meter (its usage per operation, and its trace), the
    records each measured operation stands for, and the periods it wrote."""

    meter: CapacityMeter
    settings: PeriodicSettings
    period: Period
    window_id: str  # the period the quiet and busy records fall in
    next_window_id: str  # the period the open opened
    records: dict[str, int] = field(default_factory=dict)


def measure_periodic(
    dynamodb: Any, reader: Any, streams: Any, table: str, stream_arn: str, settings: PeriodicSettings
) -> PeriodicRun:
    """Run the periodic report's workloads on `table` (the template's, with its stream) through
    `dynamodb`, metered; `reader` is the meter's own unmetered client."""
    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.counting_store import DynamoCountingStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.adapters.table_layout import STREAM_FILTER_PATTERNS
    from functions.core import accounts
    from functions.core.admission import Directory, ShardingSettings
    from functions.core.model import NewResource
    from local.filters import matches_any
    from tests.support.stream import StreamTap, process_stream_records

    meter = CapacityMeter(dynamodb, reader=reader, trace=True)
    period = Period(settings.kind)
    first = period.window_at(settings.start or datetime.now(UTC))
    # One second into the period: every measured record falls in it (the quiet ones a second
    # apart, the busy ones at the projected rate), and the open is at the next period's first instant.
    clock = PeriodClock(first.start + timedelta(seconds=1))
    the_table = DynamoTable(dynamodb, table)
    api, counting = DynamoApiStore(the_table), DynamoCountingStore(the_table, clock)
    stream = StreamTap(streams, stream_arn)

    def delivered() -> list[dict[str, Any]]:
        """The stream's new records the consumer gets: those its filter lets through, as Lambda's."""
        return [record for record in stream.drain() if matches_any(STREAM_FILTER_PATTERNS, record)]

    account, quiet, busy = Quota("periodic"), Quota("periodic", "quiet"), Quota("periodic", "busy")
    run = PeriodicRun(meter, settings, period, first.id, period.following(first).id)

    def create(quota: Quota, directory: Directory) -> None:
        accounts.create_resource(
            api, quota, NewResource("call", amount=settings.amount), None, clock.text, directory=directory
        )

    def count(operation: str) -> None:
        with meter.operation(operation):
            process_stream_records(counting, delivered())

    with meter.operation("setup"):
        accounts.put_account(api, account, accounts.limit_change(10, clock.epoch_ms()), clock.text)
        for quota in (quiet, busy):
            change = replace(accounts.limit_change(LIMIT, clock.epoch_ms()), period=period)
            accounts.put_limit(api, quota, change, clock.text)
        process_stream_records(counting, delivered())
    # The quiet quota's process: its first create learns the period and opens it; the counter's
    # first count decides its thresholds' headroom (docs/events.md). Not measured: both come apart below.
    process = Directory()
    with meter.operation("setup"):
        create(quiet, process)
        process_stream_records(counting, delivered())

    # A second process meets the quota: its holding write is refused, then it admits on the period.
    clock.advance(1)
    with meter.operation(FIRST_OF_PROCESS):
        create(quiet, Directory())
    count(FIRST_OF_PROCESS_COUNT)
    run.records[FIRST_OF_PROCESS] = run.records[FIRST_OF_PROCESS_COUNT] = 1

    # Quiet: each record alone, counted alone.
    for _ in range(settings.records):
        clock.advance(1)
        with meter.operation(QUIET_CREATE):
            create(quiet, process)
        count(QUIET_COUNT)
    run.records[QUIET_CREATE] = run.records[QUIET_COUNT] = settings.records

    # Busy: at the projected rate, its shards grown in the warm-up, records in full batches.
    sharded = Directory(ShardingSettings(min_window=SIMULATED_WINDOW), clock=clock, rng=random.Random(1))  # noqa: S311
    waiting: list[dict[str, Any]] = []

    def consume(operation: str, last: bool = False) -> None:
        waiting.extend(delivered())
        while waiting and (len(waiting) >= settings.batch or last):
            batch, waiting[:] = waiting[: settings.batch], waiting[settings.batch :]
            with meter.operation(operation):
                process_stream_records(counting, batch)

    for _ in range(settings.warmup):
        clock.advance(1 / settings.rate)
        with meter.operation("busy warm-up"):
            create(busy, sharded)
        consume("busy warm-up")
    consume("busy warm-up", last=True)
    for _ in range(settings.hot_records):
        clock.advance(1 / settings.rate)
        with meter.operation(BUSY_CREATE):
            create(busy, sharded)
        consume(BUSY_COUNT)
    consume(BUSY_COUNT, last=True)
    run.records[BUSY_CREATE] = run.records[BUSY_COUNT] = settings.hot_records

    # The next period's first create, by a process that knows the period: it opens the period.
    clock.move_to(period.following(first).start)
    with meter.operation(OPEN):
        create(quiet, process)
    count(OPEN_COUNT)
    run.records[OPEN] = run.records[OPEN_COUNT] = 1

    _baselines(dynamodb, table, meter, settings, first.id)
    run.records[ATOMIC] = run.records[MARKER] = settings.records
    return run


def _baselines(dynamodb: Any, table: str, meter: CapacityMeter, settings: PeriodicSettings, window_id: str) -> None:
    """The two baselines' records, on the same table and emulator: a counter item per quota and
    period, and (baseline 2) a marker item per record beside it."""
    from functions.adapters.table_layout import PARTITION_KEY, SORT_KEY

    def key(pk: str, sk: str) -> dict[str, dict[str, str]]:
        return {PARTITION_KEY: {"S": pk}, SORT_KEY: {"S": sk}}

    amount = {":n": {"N": str(settings.amount)}}
    atomic = f"BASELINE#atomic@{window_id}"
    for _ in range(settings.records):
        with meter.operation(ATOMIC):
            dynamodb.update_item(
                TableName=table,
                Key=key(atomic, "COUNTER"),
                UpdateExpression="ADD #count :n",
                ExpressionAttributeNames={"#count": "count"},
                ExpressionAttributeValues=amount,
            )
    marker = f"BASELINE#marker@{window_id}"
    for number in range(settings.records):
        with meter.operation(MARKER):
            dynamodb.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": table,
                            "Item": key(marker, f"RECORD#{number:08d}"),
                            "ConditionExpression": "attribute_not_exists(#pk)",
                            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
                        }
                    },
                    {
                        "Update": {
                            "TableName": table,
                            "Key": key(marker, "COUNTER"),
                            "UpdateExpression": "ADD #count :n",
                            "ConditionExpression": "attribute_not_exists(#count) OR #count <= :ceiling",
                            "ExpressionAttributeNames": {"#count": "count"},
                            "ExpressionAttributeValues": {
                                **amount,
                                ":ceiling": {"N": str(LIMIT - settings.amount)},
                            },
                        }
                    },
                ]
            )


# --- the report ---------------------------------------------------------------------------------


@dataclass
class PerRecord:
    calls: float
    wcu: float
    rcu: float
    calls_by_api: dict[str, float]
    item: tuple[str, float]  # the hottest item and its WCU per record
    key: tuple[str, float]  # the hottest table partition key
    index_key: tuple[str, float]  # the hottest index key


def per_record(run: PeriodicRun, *operations: str) -> PerRecord:
    """The operations' capacity per record they stand for, added up (a create and its count)."""
    calls: dict[str, float] = defaultdict(float)
    items: dict[str, float] = defaultdict(float)
    table_keys: dict[str, float] = defaultdict(float)
    index_keys: dict[str, float] = defaultdict(float)
    wcu = rcu = 0.0
    for name in operations:
        usage = run.meter.usage.get(name, Usage())
        records = run.records[name]
        for api, number in usage.calls.items():
            calls[api] += number / records
        for item, units in usage.item_wcu.items():
            items[item] += units / records
        for (place, partition), units in usage.wcu.items():
            (index_keys if " index " in place else table_keys)[f"{place} key {partition}"] += units / records
        wcu += usage.total_wcu / records
        rcu += usage.total_rcu / records
    return PerRecord(
        calls=sum(calls.values()),
        wcu=wcu,
        rcu=rcu,
        calls_by_api=dict(calls),
        item=_hottest(items),
        key=_hottest(table_keys),
        index_key=_hottest(index_keys),
    )


def _hottest(units: dict[str, float]) -> tuple[str, float]:
    return max(units.items(), key=lambda pair: pair[1]) if units else ("-", 0.0)


def shard_average(run: PeriodicRun) -> tuple[int, float]:
    """The busy quota's admission shards (shard 0 aside: every one its warm-up and measured creates
    wrote), and what each takes per record on average, of what the measured creates wrote on them."""
    shards = {
        item
        for name in ("busy warm-up", BUSY_CREATE)
        for item in run.meter.usage.get(name, Usage()).item_wcu
        if family(item).startswith("SHARD#")
    }
    usage = run.meter.usage.get(BUSY_CREATE, Usage())
    measured = sum(units for item, units in usage.item_wcu.items() if item in shards)
    return len(shards), measured / len(shards) / run.settings.hot_records if shards else 0.0


def ceiling(units_per_record: float) -> float:
    """Records a second before a place taking `units_per_record` reaches a partition's 1,000 WCU/s."""
    return PARTITION_WCU_PER_SECOND / units_per_record if units_per_record else float("inf")


def family(place: str) -> str:
    """An item or index key without its ids: a resource's id, a shard's or counter's number, a
    period's id, an index bucket, a baseline's record number."""
    place = place.split(" / ", 1)[-1] if " index " not in place else place.split(" index ", 1)[-1]
    place = re.sub(r"RESOURCE#\S+", "RESOURCE#<id>", place)
    place = re.sub(r"RECORD#\d+", "RECORD#<n>", place)
    place = re.sub(r"@\d{8}T\d{6}Z", "@<period>", place)
    place = re.sub(r"^(SHARD#\S+)#\d+", r"\1#<n>", place)
    place = re.sub(r"^(COUNTER#\S+)#\d+", r"\1#<n>", place)
    return re.sub(r" key \S+$", " key <bucket>", place)


def what_it_buys(counting: bool, place: str) -> str:
    """What a busy record's write of `place` (an item or index key family) is for (docs/periods.md)."""
    if " key " in place:  # an index key
        if place.startswith("pending"):
            if counting:
                return "its pending index entry removed: the record's counting work is done"
            return "its pending index entry: the sweeper counts a record the stream and both DLQs lost"
        return "the activity index entry (moved at most once a minute a shard): the sweeper finds the period"
    if "RESOURCE#" in place:
        if counting:
            return "counted exactly once, in its own period, however late or often its stream record comes"
        return "the record: its Idempotency-Key (a retry in the next period is the same record), refund, history"
    if place.endswith("/ COUNTER"):
        return "the period's eventual counter (one write a batch, over counter shards)"
    if counting:
        return "the period's thresholds (a decision on its shard 0)"
    if place.startswith("SHARD#") and "@" in place:
        return "admission: a reservation on one shard's room, then its settlement (the best-effort count)"
    return "admission on the period's shard 0 (room granted to a new shard, while the quota grows)"


def write_lines(run: PeriodicRun) -> list[str]:
    """The busy record's writes, one line per kind: the create's or the consumer's, the call, the
    item family or index written, its writes and WCU per record, and what it buys."""
    grouped: dict[tuple[str, str, str], list[Billed]] = defaultdict(list)
    for write in run.meter.trace or []:
        if write.operation in (BUSY_CREATE, BUSY_COUNT):
            grouped[(write.operation, write.api, family(write.place))].append(write)
    records = run.settings.hot_records
    lines = []
    for (operation, api, place), writes in sorted(
        grouped.items(), key=lambda pair: (pair[0][0] != BUSY_CREATE, -sum(entry.units for entry in pair[1]))
    ):
        counting = operation == BUSY_COUNT
        lines.append(
            f"    {sum(entry.units for entry in writes) / records:5.2f} WCU {len(writes) / records:6.3f} writes  "
            f"{'consumer' if counting else 'create'} {api} {place}: {what_it_buys(counting, place)}"
        )
    return lines


def report(run: PeriodicRun) -> str:
    settings = run.settings
    quiet = per_record(run, QUIET_CREATE, QUIET_COUNT)
    busy = per_record(run, BUSY_CREATE, BUSY_COUNT)
    busy_create = per_record(run, BUSY_CREATE)
    atomic, marker = per_record(run, ATOMIC), per_record(run, MARKER)
    shards = shard_average(run)

    def figures(name: str, figure: PerRecord) -> list[str]:
        by_api = ", ".join(f"{api} {number:.2g}" for api, number in sorted(figure.calls_by_api.items()))
        lines = [
            f"  {name}: {figure.calls:.2f} calls ({by_api}), {figure.wcu:.2f} WCU, {figure.rcu:.2f} RCU per record",
            f"    hottest item {figure.item[1]:.3f} WCU ({_short(figure.item[0])}): {_rate(figure.item[1])}",
            f"    hottest table partition key {figure.key[1]:.3f} WCU ({_short(figure.key[0])}): "
            f"{_rate(figure.key[1])}",
        ]
        if figure.index_key[1]:
            lines.append(
                f"    hottest index key {figure.index_key[1]:.3f} WCU ({_short(figure.index_key[0])}): "
                f"{_rate(figure.index_key[1])}"
            )
        return lines

    def single(name: str, operation: str) -> str:
        usage = run.meter.usage[operation]
        by_api = ", ".join(f"{api} {number:g}" for api, number in sorted(usage.calls.items()))
        where = ", ".join(
            f"{family(item)} {units:g}" for item, units in sorted(usage.item_wcu.items(), key=lambda pair: -pair[1])
        )
        return (
            f"  {name}: {sum(usage.calls.values()):g} calls ({by_api}), {usage.total_wcu:g} WCU ({where}), "
            f"{usage.total_rcu:g} RCU"
        )

    lines = [
        f"periodic quotas (period {settings.kind.value}, records of amount {settings.amount}; "
        f"ceilings at a partition's 1,000 WCU/s):",
        *figures(f"quiet, {settings.records} records each counted alone", quiet),
        *figures(
            f"busy at a projected {settings.rate:,.0f} records/s ({settings.hot_records} records after "
            f"{settings.warmup} of warm-up, counted in batches of {settings.batch})",
            busy,
        ),
        f"    its create alone: {busy_create.calls:.2f} calls, {busy_create.wcu:.2f} WCU; the consumer's share "
        f"{busy.wcu - busy_create.wcu:.2f} WCU, {busy.calls - busy_create.calls:.3f} calls per record",
        single("a process's first create (its holding write refused, then the period)", FIRST_OF_PROCESS),
        single("  its count", FIRST_OF_PROCESS_COUNT),
        single("a period's first create (the open)", OPEN),
        single("  its count (the period counter's first: a decision)", OPEN_COUNT),
        f"  baselines, {settings.records} records each, same table and emulator:",
        *figures("1 atomic counter (ADD, no condition: no limit, drifts on a retried write)", atomic),
        *figures("2 transaction + marker item (exact: Put marker, Update counter within the limit)", marker),
        "",
        f"one busy periodic quota, projected (goal {GOAL_RECORDS_PER_SECOND:,} records/s):",
        f"    {ceiling(busy.item[1]):>10,.0f}/s  hottest item: {_short(busy.item[0])} ({busy.item[1]:.3f} WCU/record)",
        f"    {ceiling(shards[1]):>10,.0f}/s  its {shards[0]} admission shards besides shard 0, at their "
        f"average ({shards[1]:.4f} WCU/record each)",
        f"    {ceiling(busy.index_key[1]):>10,.0f}/s  hottest index key: {_short(busy.index_key[0])} "
        f"({busy.index_key[1]:.3f} WCU/record)",
        f"    {ceiling(busy.key[1]):>10,.0f}/s  hottest table partition key (soft: split by sort key): "
        f"{_short(busy.key[0])} ({busy.key[1]:.3f} WCU/record)",
        f"    {ceiling(atomic.item[1]):>10,.0f}/s  baseline 1's counter item ({atomic.item[1]:.2f} WCU/record)",
        f"    {ceiling(marker.item[1]):>10,.0f}/s  baseline 2's counter item ({marker.item[1]:.2f} WCU/record; "
        f"its partition key {marker.key[1]:.2f}: {ceiling(marker.key[1]):,.0f}/s)",
        "  on-demand cost per million records: "
        + ", ".join(f"{name} ${_cost(figure):.2f}" for name, figure in (("quiet", quiet), ("busy", busy)))
        + f"; baseline 1 ${_cost(atomic):.2f}, baseline 2 ${_cost(marker):.2f} ({_prices()})",
        f"  what each WCU of a busy record buys ({busy.wcu:.2f} WCU a record; baseline 1 {atomic.wcu:.2f}, "
        f"baseline 2 {marker.wcu:.2f}):",
        *write_lines(run),
    ]
    return "\n".join(lines)


def _cost(figure: PerRecord) -> float:
    from benchmarks.capacity import PRICE_PER_MILLION_READ_UNITS, PRICE_PER_MILLION_WRITE_UNITS

    return figure.wcu * PRICE_PER_MILLION_WRITE_UNITS + figure.rcu * PRICE_PER_MILLION_READ_UNITS


def _prices() -> str:
    from benchmarks.capacity import PRICE_PER_MILLION_READ_UNITS, PRICE_PER_MILLION_WRITE_UNITS, PRICES_AS_OF

    return f"${PRICE_PER_MILLION_WRITE_UNITS}/M WRU, ${PRICE_PER_MILLION_READ_UNITS}/M RRU, {PRICES_AS_OF}"


def _rate(units: float) -> str:
    return f"{ceiling(units):,.0f} records/s" if units else "-"


def _short(place: str) -> str:
    """An item or key without its table's name."""
    return place.split(" / ", 1)[-1] if " / " in place else place.split(" ", 1)[-1]


def periodic_report(emulator_url: str, settings: PeriodicSettings) -> str:
    """The report on its own table of the emulator at `emulator_url`."""
    import boto3

    from tests.support.tables import create_table

    dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
    stream_arn = create_table(dynamodb, "capacity-periodic")
    run = measure_periodic(
        dynamodb,
        boto3.client("dynamodb", endpoint_url=emulator_url),
        boto3.client("dynamodbstreams", endpoint_url=emulator_url),
        "capacity-periodic",
        stream_arn,
        settings,
    )
    return report(run)
