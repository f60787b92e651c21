"""What the design costs DynamoDB, per operation and per item and key, and the ceilings it implies
on AWS: `make bench-capacity` (ARGS='--iterations 20 --accounts 50 --batch 100').

Runs the real flows (functions.core with the real adapters) against the embedded emulator, with
the capacity meter (benchmarks/capacity_meter.py) on the client: create, delete, get, list, the stream consumer
per record, and a heal. Then projects, from the capacity per create+delete iteration:

* **one account**: the iterations per second before its hottest item reaches 1,000 WCU/s or
  3,000 RCU/s (an item is never split across partitions), and before its hottest index key does;
  its table partition key is reported apart (DynamoDB may split a hot partition key by sort key);
* **the whole table** with `--accounts` evenly loaded accounts: before any item or index key of
  the table reaches those limits, whatever the number of accounts;
* **the on-demand cost** per million create+delete iterations (PRICES below);
* **resource types**: one account with `--types` of them, quiet over all, then one busy beside
  quiet ones: the hottest item and partition key per iteration, and each type's partition keys;
* **periodic quotas** (benchmarks/periodic_capacity.py; `--period day|month` for that report
  alone): a usage record, quiet and busy, a period's and a process's first create, and two
  baselines in the same run, with the records a second one busy quota reaches;
* **plans** (`--plans` for that report alone): a plan's PUT, GET and list, and an account put on
  a plan of three types, in total and by item; an expiring grant: its PUT, creates under it and at
  its end, the sweep that ends one.

Prints figures and asserts none; tests/handler/test_capacity_meter.py checks the meter itself.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3

from benchmarks.capacity_meter import CapacityMeter, Usage
from benchmarks.periodic_capacity import PeriodicSettings, periodic_report
from functions.adapters import keys
from functions.core.admission import Directory, ShardingSettings
from functions.core.leases import iso_timestamp
from functions.core.model import Quota
from functions.core.periods import PeriodKind
from functions.shared.clock import Clock

# us-east-1, on-demand, Standard table class, as listed on aws.amazon.com/dynamodb/pricing/on-demand/
# since 2024-11-01: per million write request units and read request units.
PRICE_PER_MILLION_WRITE_UNITS = 0.625
PRICE_PER_MILLION_READ_UNITS = 0.125
PRICES_AS_OF = "2024-11-01, us-east-1"
PARTITION_WCU_PER_SECOND = 1000.0
PARTITION_RCU_PER_SECOND = 3000.0
ITERATION = ("create", "delete", "consumer record")


# The benchmarks' stores and flows run on the system clock, as the deployed functions do.
WALL_CLOCK = Clock()


def now_text() -> str:
    """The flows' clock, as the API handler's: ISO 8601 UTC, milliseconds."""
    return iso_timestamp(WALL_CLOCK.now())


def run_workload(meter: CapacityMeter, dynamodb: Any, streams: Any, stream_arn: str, table: str, args: Any) -> int:
    """Create+delete iterations spread evenly over the accounts; returns how many ran."""
    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.counting_store import DynamoCountingStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.adapters.healing_store import DynamoHealingStore
    from functions.core import accounts
    from functions.core.healing import heal_account
    from functions.core.model import NewResource
    from tests.support.stream import StreamTap, process_stream_records

    the_table = DynamoTable(dynamodb, table)
    api, counting = DynamoApiStore(the_table), DynamoCountingStore(the_table, WALL_CLOCK)
    tap = StreamTap(streams, stream_arn)
    # The API's cache of accounts' shard layouts, on a clock that runs at the busy account's
    # projected rate: its shards grow as they would at that rate on AWS, whatever the emulator's pace.
    clock = SimulatedClock(args.rate or 1.0)
    directory = Directory(ShardingSettings(min_window=SIMULATED_WINDOW), clock=clock, rng=random.Random(1))  # noqa: S311
    # The flows' wall clock too (their minute stamps), for the busy account.
    stamp = clock.text if args.rate else now_text
    names = [Quota(f"acct-{number:03d}") for number in range(args.accounts)]
    with meter.operation("setup"):
        for name in names:
            accounts.put_account(api, name, accounts.limit_change(1_000_000, WALL_CLOCK.epoch_ms()), now_text)
        process_stream_records(counting, tap.drain())
        # A counter's first count decides its usage-threshold headroom (docs/events.md); the figures
        # are a running counter's, so each account counts one resource in and out first.
        for name in names:
            first = accounts.create_resource(api, name, NewResource("vm", {"size": 2}), None, now_text)
            process_stream_records(counting, tap.drain())
            accounts.delete_resource(api, name, first.resource.resource_id, now_text)
            process_stream_records(counting, tap.drain())

    waiting: list[dict[str, Any]] = []

    def consume(last: bool = False) -> None:
        """Quiet (batch 1): each record alone, as the stream delivers a trickle. Hot: batches of
        `args.batch`, as Lambda delivers a busy shard's records (the function's BatchSize)."""
        waiting.extend(tap.drain())
        while waiting and (len(waiting) >= args.batch or last):
            batch, waiting[:] = waiting[: args.batch], waiting[args.batch :]
            with meter.operation("consumer record"):
                process_stream_records(counting, batch)

    # A busy account's resources outlive a batch: each iteration deletes the resource created
    # `args.batch` iterations before (quiet: the one it just created), so creates and deletes are
    # counted in different batches, not folded away.
    lag = 0 if args.batch == 1 else args.batch
    alive: dict[Quota, list[str]] = {name: [] for name in names}
    if args.warmup:
        # Steady state first: the account grows its shards and grants them room, then the meter
        # starts again, so the figures are those of a busy account, not of its first second.
        for _ in range(args.warmup):
            clock.tick()
            created = accounts.create_resource(
                api, names[0], NewResource("vm", {"size": 2}, amount=args.amount), None, stamp, directory=directory
            )
            alive[names[0]].append(created.resource.resource_id)
            if len(alive[names[0]]) > lag:
                accounts.delete_resource(api, names[0], alive[names[0]].pop(0), stamp, directory=directory)
            consume()
        meter.usage.clear()
    iterations = 0
    # Without a warm-up, the last resources are deleted after the last create; after one, the
    # account stays busy: each iteration is one create and one delete.
    for number in range(args.iterations + (0 if args.warmup else lag)):
        for name in names:
            if number < args.iterations:
                clock.tick()
                with meter.operation("create"):
                    created = accounts.create_resource(
                        api, name, NewResource("vm", {"size": 2}, amount=args.amount), None, stamp, directory=directory
                    )
                alive[name].append(created.resource.resource_id)
                consume()
                with meter.operation("get"):
                    accounts.get_resource(api, name, created.resource.resource_id)
                with meter.operation("list"):
                    accounts.list_resources(api, name, 20, None)
                iterations += 1
            if len(alive[name]) > lag or number >= args.iterations:
                with meter.operation("delete"):
                    accounts.delete_resource(api, name, alive[name].pop(0), stamp, directory=directory)
                consume()
    consume(last=True)
    healing = DynamoHealingStore(the_table)
    for name in names:
        with meter.operation("heal"):
            heal_account(healing, name, datetime.now(UTC) + timedelta(hours=1), timedelta(seconds=30))
    return iterations


# How long the API's rate measurement must look at a shard, on the simulated clock: short, so a few
# hundred iterations show a busy account's growth (the functions use a second of real time).
SIMULATED_WINDOW = 0.005


class SimulatedClock:
    """Seconds that pass at `rate` iterations a second, one tick per iteration."""

    def __init__(self, rate: float) -> None:
        self.now = 0.0
        self._step = 1.0 / rate
        self._start = datetime.now(UTC)

    def text(self) -> str:
        """The wall clock, as the flows read it (now_text), at the simulated pace."""
        return iso_timestamp(self._start + timedelta(seconds=self.now))

    def tick(self) -> None:
        self.now += self._step

    def __call__(self) -> float:
        return self.now


def per_iteration(meter: CapacityMeter, iterations: int) -> Usage:
    """The capacity of one create+delete iteration: create, delete and the records they cause."""
    total = Usage()
    for name in ITERATION:
        usage = meter.usage.get(name)
        if usage is None:
            continue
        for place, units in usage.wcu.items():
            total.wcu[place] += units / iterations
        for place, units in usage.rcu.items():
            total.rcu[place] += units / iterations
        for item, units in usage.item_wcu.items():
            total.item_wcu[item] += units / iterations
        for item, units in usage.item_rcu.items():
            total.item_rcu[item] += units / iterations
        for call, count in usage.calls.items():
            total.calls[call] += count / iterations
    return total


def hottest(units: dict[Any, float]) -> tuple[Any, float]:
    return max(units.items(), key=lambda pair: pair[1]) if units else ("-", 0.0)


def ceilings(iteration: Usage) -> dict[str, tuple[str, float]]:
    """Iterations per second before each kind of place reaches its partition limit."""
    index_keys = {place: units for place, units in iteration.wcu.items() if " index " in place[0]}
    table_keys = {place: units for place, units in iteration.wcu.items() if " index " not in place[0]}
    found: dict[str, tuple[str, float]] = {}
    for label, units, limit in (
        ("hottest item (writes)", iteration.item_wcu, PARTITION_WCU_PER_SECOND),
        ("hottest item (reads)", iteration.item_rcu, PARTITION_RCU_PER_SECOND),
        ("hottest index key (writes)", index_keys, PARTITION_WCU_PER_SECOND),
        ("hottest table partition key (writes; soft)", table_keys, PARTITION_WCU_PER_SECOND),
    ):
        place, amount = hottest(units)
        if amount:
            where = " key ".join(place) if isinstance(place, tuple) else place
            found[label] = (f"{where} ({amount:.2f}/iteration)", limit / amount)
    return found


def report(meter: CapacityMeter, one: Usage, many: Usage, accounts: int, iterations: int) -> str:
    lines = ["per operation (one account's share when run over several), averaged over its runs:"]
    lines.append(f"  {'operation':<18}{'runs':>6}{'calls':>8}{'WCU':>8}{'RCU':>8}  calls by API")
    for name, usage in meter.usage.items():
        if name == "setup" or not usage.runs:
            continue
        calls = sum(usage.calls.values()) / usage.runs
        by_api = ", ".join(f"{api} {count / usage.runs:.2g}" for api, count in sorted(usage.calls.items()))
        lines.append(
            f"  {name:<18}{usage.runs:>6}{calls:>8.2f}{usage.total_wcu / usage.runs:>8.2f}"
            f"{usage.total_rcu / usage.runs:>8.2f}  {by_api}"
        )
    table_wcu = sum(units for place, units in one.wcu.items() if " index " not in place[0])
    index_wcu = one.total_wcu - table_wcu
    lines += [
        "",
        f"one create+delete iteration (create, delete, the records they cause), one account, {iterations} iterations:",
        f"  {one.total_wcu:.2f} WCU ({table_wcu:.2f} on the table, {index_wcu:.2f} on indexes), "
        f"{one.total_rcu:.2f} RCU, {sum(one.calls.values()):.1f} calls "
        f"({', '.join(f'{api} {count:.2g}' for api, count in sorted(one.calls.items()))})",
        "  the hottest places per iteration:",
    ]
    places: dict[str, float] = defaultdict(float)
    for item, units in one.item_wcu.items():
        places[f"item {item}"] += units
    for (place, key), units in one.wcu.items():
        if " index " in place:
            places[f"{place} key {key}"] += units
        places[f"{place} partition key {key}"] += units if " index " not in place else 0
    for place, units in sorted(places.items(), key=lambda pair: -pair[1])[:6]:
        if units:
            lines.append(f"    {units:6.2f} WCU  {place}")
    lines += ["", "projected AWS ceilings (1,000 WCU/s and 3,000 RCU/s per partition), iterations per second:"]
    for scope, usage in (("one account", one), (f"whole table, {accounts} evenly loaded accounts", many)):
        lines.append(f"  {scope}:")
        for label, (place, rate) in ceilings(usage).items():
            lines.append(f"    {rate:>10,.0f}/s  {label}: {place}")
    cost = one.total_wcu * PRICE_PER_MILLION_WRITE_UNITS + one.total_rcu * PRICE_PER_MILLION_READ_UNITS
    lines += [
        "",
        f"on-demand cost per million create+delete iterations: ${cost:.2f} "
        f"(${PRICE_PER_MILLION_WRITE_UNITS}/M WRU, ${PRICE_PER_MILLION_READ_UNITS}/M RRU, {PRICES_AS_OF})",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.capacity", description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20, help="create+delete iterations per account")
    parser.add_argument("--accounts", type=int, default=50, help="accounts of the whole-table projection")
    parser.add_argument("--hot-iterations", type=int, default=100, help="iterations of the busy account")
    parser.add_argument("--batch", type=int, default=100, help="records per consumer batch for the busy account")
    parser.add_argument(
        "--rate", type=float, default=10_000, help="the busy account's projected iterations a second (its shards grow)"
    )
    parser.add_argument("--warmup", type=int, default=600, help="busy iterations before the meter starts")
    parser.add_argument("--types", type=int, default=3, help="resource types of the one account of the types section")
    parser.add_argument(
        "--amount", type=int, default=1, help="units each resource of the create+delete iterations holds (amounts)"
    )
    parser.add_argument(
        "--period",
        choices=[kind.value for kind in PeriodKind],
        help="the periodic quotas' report alone, for this period (the full run makes it for a day): "
        "--iterations quiet records and of each baseline, --hot-iterations busy records after --warmup",
    )
    parser.add_argument(
        "--plans",
        action="store_true",
        help="the plans' report alone: a plan's PUT, GET and list, and an account put on a plan of three types",
    )
    parser.add_argument(
        "--lifecycle",
        action="store_true",
        help="the lifecycle's report alone: a type's delete, and an account's deletion and erasure",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

    from local.emulator import EmulatorProcess
    from local.runtime import LOCAL_CREDENTIALS
    from tests.support.tables import create_table

    os.environ.update(LOCAL_CREDENTIALS, AWS_DEFAULT_REGION="us-east-1")
    periodic = PeriodicSettings(
        kind=PeriodKind(args.period or PeriodKind.DAY.value),
        records=args.iterations,
        hot_records=args.hot_iterations,
        warmup=args.warmup,
        batch=args.batch,
        rate=args.rate,
        amount=args.amount,
    )
    if args.lifecycle:
        print("running the lifecycle ...", flush=True)
        with EmulatorProcess() as emulator:
            text = lifecycle_report(emulator.url)
        print()
        print(text)
        return 0
    if args.plans:
        print("running plans ...", flush=True)
        with EmulatorProcess() as emulator:
            text = plans_report(emulator.url)
        print()
        print(text)
        return 0
    if args.period:
        print(f"running usage records of a {args.period} quota and the two baselines ...", flush=True)
        with EmulatorProcess() as emulator:
            text = periodic_report(emulator.url, periodic)
        print()
        print(text)
        return 0
    runs = {
        "quiet": argparse.Namespace(
            accounts=1, iterations=args.iterations, batch=1, rate=None, warmup=0, amount=args.amount
        ),
        "many": argparse.Namespace(
            accounts=args.accounts,
            iterations=max(1, args.iterations // 10),
            batch=1,
            rate=None,
            warmup=0,
            amount=args.amount,
        ),
        "hot": argparse.Namespace(
            accounts=1,
            iterations=args.hot_iterations,
            batch=args.batch,
            rate=args.rate,
            warmup=args.warmup,
            amount=args.amount,
        ),
    }
    results: dict[str, tuple[CapacityMeter, Usage, int]] = {}
    with EmulatorProcess() as emulator:
        for name, workload in runs.items():
            dynamodb = boto3.client("dynamodb", endpoint_url=emulator.url)
            streams = boto3.client("dynamodbstreams", endpoint_url=emulator.url)
            table = f"capacity-{name}"
            stream_arn = create_table(dynamodb, table)
            meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator.url))
            print(
                f"running {workload.iterations} iteration(s) on each of {workload.accounts} account(s), "
                f"records in batches of {workload.batch} ...",
                flush=True,
            )
            ran = run_workload(meter, dynamodb, streams, stream_arn, table, workload)
            results[name] = (meter, per_iteration(meter, ran), ran)
        print("running the tenant rate limiter ...", flush=True)
        limiter = rate_limit_report(emulator.url)
        print("running dead leases ...", flush=True)
        dead_leases = dead_lease_report(emulator.url)
        print(f"running {args.types} resource types on one account ...", flush=True)
        types = types_report(emulator.url, args)
        print("running usage thresholds ...", flush=True)
        thresholds = threshold_report(emulator.url)
        print("running refused creates ...", flush=True)
        refusals = refusal_report(emulator.url)
        print("running keyed PUTs ...", flush=True)
        keyed_puts = keyed_put_report(emulator.url)
        print("running resizes ...", flush=True)
        resizes = resize_report(emulator.url)
        print("running usage records of a day quota and the two baselines ...", flush=True)
        periodic_figures = periodic_report(emulator.url, periodic)
        print("running plans ...", flush=True)
        plan_figures = plans_report(emulator.url)
    (meter, one, ran), (_, many, _) = results["quiet"], results["many"]
    print()
    print(report(meter, one, many, args.accounts, ran))
    print()
    print(hot_report(*results["hot"], args.batch, args.rate, args.warmup))
    print()
    print(limiter)
    print()
    print(dead_leases)
    print()
    print(types)
    print()
    print(thresholds)
    print()
    print(refusals)
    print()
    print(keyed_puts)
    print()
    print(resizes)
    print()
    print(periodic_figures)
    print()
    print(plan_figures)
    return 0


def rate_limit_report(emulator_url: str) -> str:
    """What the per-tenant rate limit adds to each request (functions/core/rate_limits.py): a quiet
    tenant's one request a window, and a busy tenant's steady 10,000 requests/s over 4 environments."""
    from functions.adapters.dynamo_table import DynamoTable
    from functions.adapters.rate_windows import DynamoWindowStore
    from functions.core.model import TenantRate
    from functions.core.rate_limits import DEFAULT_TENANT_RATE, TenantLimiter
    from tests.support.tables import create_table

    dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
    create_table(dynamodb, "capacity-rates")
    meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator_url))
    store = DynamoWindowStore(DynamoTable(dynamodb, "capacity-rates"))
    clock_ms = [1_800_000_000_000]
    lines = ["the per-tenant rate limit, per request:"]
    quiet = TenantLimiter(store, DEFAULT_TENANT_RATE, clock_ms=lambda: clock_ms[0])
    with meter.operation("quiet tenant") as usage:
        for _ in range(20):
            quiet.admit("quiet")
            clock_ms[0] += DEFAULT_TENANT_RATE.window_ms
    calls = sum(usage.calls.values())
    lines.append(f"  a quiet tenant, one request a window: {usage.total_wcu / 20:.2f} WCU, {calls / 20:.2f} calls")
    busy_rate = TenantRate(requests_per_second=10_000, window_seconds=1)
    environments = [TenantLimiter(store, busy_rate, clock_ms=lambda: clock_ms[0]) for _ in range(4)]
    windows, per_window = 5, 2_000
    with meter.operation("busy tenant") as usage:
        for _ in range(windows):
            for _ in range(per_window // len(environments)):
                for environment in environments:
                    environment.admit("busy")
            clock_ms[0] += busy_rate.window_ms
    requests = windows * per_window
    item, most = hottest(usage.item_wcu)
    lines.append(
        f"  a busy tenant, 2,000 requests a 1 s window over 4 environments, {windows} windows: "
        f"{usage.total_wcu / requests:.4f} WCU, {sum(usage.calls.values()) / requests:.4f} calls; "
        f"{sum(usage.calls.values()) / windows / len(environments):.1f} leases per environment and window; "
        f"hottest item {most / windows:.0f} WCU a window ({item})"
    )
    lines.append(busiest_tenant_report(meter, store, clock_ms))
    return "\n".join(lines)


def threshold_report(emulator_url: str) -> str:
    """What the usage events cost the consumer (docs/events.md): a counted record that crosses no
    threshold (its headroom moves with the count), and one that crosses 80% of the limit (a
    decision: the failed transaction, a read of the account item, and the transaction again with
    an outbox item); a PUT that changes the limit (with its event) and the decision it asks for;
    the same for a PUT that changes only the quota's thresholds."""
    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.counting_store import DynamoCountingStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.core import accounts
    from functions.core.model import NewResource
    from tests.support.stream import StreamTap, process_stream_records
    from tests.support.tables import create_table

    dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
    streams = boto3.client("dynamodbstreams", endpoint_url=emulator_url)
    stream_arn = create_table(dynamodb, "capacity-thresholds")
    meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator_url))
    table = DynamoTable(dynamodb, "capacity-thresholds")
    api, counting, tap = DynamoApiStore(table), DynamoCountingStore(table, WALL_CLOCK), StreamTap(streams, stream_arn)
    name = Quota("thresholds")
    accounts.put_account(api, name, accounts.limit_change(10, WALL_CLOCK.epoch_ms()), now_text)

    def counted(operation: str) -> Usage:
        accounts.create_resource(api, name, NewResource("vm", {"size": 2}), None, now_text)
        with meter.operation(operation) as usage:
            process_stream_records(counting, tap.drain())
        return usage

    counted("the counter's first count")  # it decides its headroom
    quiet = 5
    for _ in range(quiet):
        nothing = counted("a record that crosses nothing")  # 2 .. 6 of 10: the meter adds them up
    counted("7 of 10")
    crossing = counted("a record that crosses 80%")
    with meter.operation("a PUT that changes the limit") as changed:  # 8 of 10 -> 8 of 20
        accounts.put_account(api, name, accounts.limit_change(20, WALL_CLOCK.epoch_ms()), now_text)
    with meter.operation("the consumer's decision on the new limit") as redecided:
        process_stream_records(counting, tap.drain())
    with meter.operation("a PUT that leaves the limit as it was") as unchanged:
        accounts.put_account(api, name, accounts.limit_change(20, WALL_CLOCK.epoch_ms()), now_text)
    own = accounts.limit_change(20, WALL_CLOCK.epoch_ms(), thresholds=(25, 90))
    with meter.operation("a PUT that changes only the thresholds") as rethresholded:  # 8 of 20: 25% is 5
        accounts.put_account(api, name, own, now_text)
    with meter.operation("the consumer's decision on the new thresholds") as redecided_own:
        process_stream_records(counting, tap.drain())
    with meter.operation("a PUT that leaves limit and thresholds as they were") as unchanged_own:
        accounts.put_account(api, name, accounts.limit_change(20, WALL_CLOCK.epoch_ms()), now_text)

    def units(usage: Usage, runs: int = 1) -> str:
        calls = ", ".join(f"{api} {count / runs:g}" for api, count in sorted(usage.calls.items()))
        counter = sum(wcu for place, wcu in usage.item_wcu.items() if str(place).endswith(keys.COUNTER_SORT_KEY))
        return (
            f"{sum(usage.calls.values()) / runs:g} calls ({calls}), {usage.total_wcu / runs:g} WCU "
            f"({counter / runs:g} on the counter item), {usage.total_rcu / runs:g} RCU"
        )

    return "\n".join(
        [
            "usage thresholds, one counted record (batch of 1) on an account of limit 10:",
            f"  a record that crosses nothing: {units(nothing, quiet)}",
            f"  a record that crosses 80% (7 -> 8): {units(crossing)}",
            f"  a PUT that changes the limit (10 -> 20, with its event): {units(changed)}",
            f"  the consumer's decision on the new limit (80% crossed down): {units(redecided)}",
            f"  a PUT that leaves the limit as it was: {units(unchanged)}",
            f"  a PUT that changes only the thresholds (80, 100 -> 25, 90, with its event): {units(rethresholded)}",
            f"  the consumer's decision on the new thresholds (25% crossed up): {units(redecided_own)}",
            f"  a PUT that leaves limit and thresholds (its own) as they were: {units(unchanged_own)}",
        ]
    )


def keyed_put_report(emulator_url: str) -> str:
    """What an `Idempotency-Key` adds to a PUT (docs/admission.md, "Limit changes"): its record,
    written first, on the PUT that changes the limit and on the one that leaves it; a retry that
    finds its own write (a replay) and one that finds a later PUT landed since (overtaken)."""
    from dataclasses import replace

    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.core import accounts
    from functions.core.leases import DEFAULT_TOMBSTONE_RETENTION
    from tests.support.tables import create_table

    dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
    create_table(dynamodb, "capacity-keyed-puts")
    meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator_url))
    api = DynamoApiStore(DynamoTable(dynamodb, "capacity-keyed-puts"))
    name = Quota("keyed")
    window = int(DEFAULT_TOMBSTONE_RETENTION.total_seconds())

    def change(limit: int, key: str | None) -> accounts.LimitChange:
        plain = accounts.limit_change(limit, WALL_CLOCK.epoch_ms())
        return plain if key is None else replace(plain, key=accounts.PutKey(key, window))

    accounts.put_account(api, name, change(10, None), now_text)
    measured: list[tuple[str, Usage]] = []
    for label, quota, limit, key in [
        ("a PUT without a key that creates an account", Quota("plain-created"), 10, None),
        ("a keyed PUT that creates an account", Quota("keyed-created"), 10, "create"),
        ("a PUT without a key that changes the limit (with its event)", name, 20, None),
        ("a keyed PUT that changes the limit (with its event)", name, 30, "change"),
        ("its retry, nothing written since (a replay)", name, 30, "change"),
        ("a PUT without a key that leaves the limit as it was", name, 30, None),
        ("a keyed PUT that leaves the limit as it was", name, 30, "same"),
        ("another admin's PUT changes the limit", name, 40, None),
        ("the keyed change's retry after that PUT (overtaken)", name, 30, "change"),
    ]:
        with meter.operation(label) as usage:
            accounts.put_account(api, quota, change(limit, key), now_text)
        measured.append((label, usage))

    def units(usage: Usage) -> str:
        calls = ", ".join(f"{api} {count:g}" for api, count in sorted(usage.calls.items()))
        where = ", ".join(f"{item} {wcu:g}" for item, wcu in sorted(usage.item_wcu.items()))
        return (
            f"{sum(usage.calls.values()):g} calls ({calls}), {usage.total_wcu:g} WCU ({where}), {usage.total_rcu:g} RCU"
        )

    lines = [f"  {label}: {units(usage)}" for label, usage in measured]
    return "\n".join(["PUTs with and without an Idempotency-Key:", *lines])


def plans_report(emulator_url: str) -> str:
    """What plans cost (docs/plans.md): a plan's PUT (created, the same again, changed), its GET
    and a page of the list; an account put on a plan of three types (new, one existing with its
    own limits, the same version again, another version with one quota changed), each in total and
    by item (each type's account item, the default type's, the plan's)."""
    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.core import accounts, plans
    from functions.core.model import NewResource
    from functions.core.periods import parse_period
    from tests.support.tables import create_table

    dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
    create_table(dynamodb, "capacity-plans")
    meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator_url))
    api = DynamoApiStore(DynamoTable(dynamodb, "capacity-plans"))
    pro = {
        "seats": plans.PlanQuota(50),
        "projects": plans.PlanQuota(10, thresholds=(50, 90)),
        "builds": plans.PlanQuota(1000, period=parse_period("month", None)),
    }
    raised = {**pro, "projects": plans.PlanQuota(20, thresholds=(50, 90))}
    for resource_type in pro:
        accounts.put_limit(
            api, Quota("owned", resource_type), accounts.limit_change(1, WALL_CLOCK.epoch_ms()), now_text
        )

    def join(account: str, plan: str = "pro") -> None:
        plans.join_plan(api, account, plan, WALL_CLOCK.epoch_ms(), now_text, lambda: True)

    def create(quota: Quota) -> None:
        accounts.create_resource(api, quota, NewResource("r"), None, now_text)

    plans.put_plan(api, "free", {}, now_text())
    for account in ("owned", "solo"):  # room for the creates below (a plan leaves the default type's limit)
        accounts.put_account(api, Quota(account), accounts.limit_change(100, WALL_CLOCK.epoch_ms()), now_text)

    steps: list[tuple[str, Callable[[], object]]] = [
        ("PUT /plans/pro, created (3 types)", lambda: plans.put_plan(api, "pro", pro, now_text())),
        ("PUT /plans/pro, the same quotas again (no write)", lambda: plans.put_plan(api, "pro", pro, now_text())),
        ("GET /plans/pro", lambda: plans.get_plan(api, "pro")),
        ("GET /plans (one page)", lambda: api.list_plans(25, None)),
        ("a new account put on pro (3 types)", lambda: join("newco")),
        ("an account with the 3 types of its own put on pro", lambda: join("owned")),
        ("the same account put on pro again (the same version)", lambda: join("owned")),
        ("PUT /plans/pro, one quota changed", lambda: plans.put_plan(api, "pro", raised, now_text())),
        ("the account put on pro's new version (one type's limit changes)", lambda: join("owned")),
        # The account registry (the accounts index): a create in an account on a plan writes no
        # index entry (the index projects only the membership); a page of the list is a Query.
        ("a create of the default type in an account on pro", lambda: create(Quota("owned"))),
        ("a create of a type pro gives (seats) in an account on pro", lambda: create(Quota("owned", "seats"))),
        ("a create of the default type in an account on no plan", lambda: create(Quota("solo"))),
        ("GET /accounts?plan=pro (one page, 2 accounts)", lambda: api.list_accounts("pro", 25, None)),
        ("GET /accounts (one page: no plan's, then pro's)", lambda: api.list_accounts(None, 25, None)),
        ("a new account put on free (its first plan, no types)", lambda: join("moved", "free")),
        ("that account moved to pro (3 types)", lambda: join("moved")),
    ]
    steps += grant_steps(api)
    steps += shadow_steps(api)
    measured: list[tuple[str, Usage]] = []
    for label, action in steps:
        with meter.operation(label) as usage:
            action()
        measured.append((label, usage))

    def units(usage: Usage) -> str:
        calls = ", ".join(f"{api} {count:g}" for api, count in sorted(usage.calls.items()))
        return f"{sum(usage.calls.values()):g} calls ({calls}), {usage.total_wcu:g} WCU, {usage.total_rcu:g} RCU"

    def by_item(usage: Usage) -> list[str]:
        items = sorted(set(usage.item_wcu) | set(usage.item_rcu))
        indexes = sorted({place for place, _ in usage.wcu if " index " in place})
        return [
            *(
                f"      {item}: {usage.item_wcu.get(item, 0):g} WCU, {usage.item_rcu.get(item, 0):g} RCU"
                for item in items
            ),
            *(
                f"      {place}: {sum(units for (p, _), units in usage.wcu.items() if p == place):g} WCU"
                for place in indexes
            ),
        ]

    lines = []
    for label, usage in measured:
        lines += [f"  {label}: {units(usage)}", *by_item(usage)]
    lines += rollout_figures(api, meter, units, by_item)
    return "\n".join(["Plans (docs/plans.md), per operation and by item:", *lines])


def lifecycle_report(emulator_url: str, resources: int = 10) -> str:
    """What the lifecycle costs (docs/plans.md, "Lifecycle"), in total and by partition key: an
    empty type's delete (a holding's, and a day type's, which reads each day of its history); a
    type's delete with `resources` live resources (deleteResources: the request's part; the
    stream's counting of each delete is any delete's); an account of three types with `resources`
    resources each, deleted (the request) and erased (the sweeper)."""
    from dataclasses import replace

    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.adapters.offboarding_store import DynamoOffboardingStore
    from functions.core import accounts, lifecycle, offboarding
    from functions.core.model import NewResource
    from functions.core.periods import parse_period
    from tests.support.tables import create_table

    dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
    create_table(dynamodb, "capacity-lifecycle")
    meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator_url))
    table = DynamoTable(dynamodb, "capacity-lifecycle")
    api = DynamoApiStore(table)
    leaving = DynamoOffboardingStore(table)

    def limit(quota: Quota, value: int = 100, period: str | None = None) -> None:
        change = accounts.limit_change(value, WALL_CLOCK.epoch_ms())
        if period is not None:
            change = replace(change, period=parse_period(period, None))
        accounts.put_limit(api, quota, change, now_text)

    def fill(quota: Quota) -> None:
        for _ in range(resources):
            accounts.create_resource(api, quota, NewResource("r"), None, now_text)

    def delete_type(quota: Quota) -> object:
        return lifecycle.delete_type(api, quota, True, WALL_CLOCK.epoch_ms(), now_text, lambda: True)

    limit(Quota("acme"))
    limit(Quota("acme", "empty"))
    limit(Quota("acme", "full"))
    fill(Quota("acme", "full"))
    limit(Quota("acme", "daily"), period="day")
    for resource_type in ("default", "seats", "projects"):
        quota = Quota("leaving", resource_type)
        limit(quota)
        fill(quota)
    later = WALL_CLOCK.now() + timedelta(minutes=5)
    steps: list[tuple[str, Callable[[], object]]] = [
        ("DELETE a type holding nothing", lambda: delete_type(Quota("acme", "empty"))),
        (
            f"DELETE a type with {resources} resources, deleteResources (the request)",
            lambda: delete_type(Quota("acme", "full")),
        ),
        (
            "DELETE a day type holding nothing (every day of its history read)",
            lambda: delete_type(Quota("acme", "daily")),
        ),
        (
            f"DELETE an account of 3 types, {resources} resources each (the request)",
            lambda: offboarding.delete_account(leaving, "leaving", WALL_CLOCK.epoch_ms(), "", WALL_CLOCK.now()),
        ),
        ("its erasure (the sweeper)", lambda: offboarding.finish_deletions(leaving, later, timedelta(seconds=60))),
        (
            "a sweep's look for deletions, none pending",
            lambda: offboarding.finish_deletions(leaving, later, timedelta(0)),
        ),
    ]
    lines = []
    for label, action in steps:
        with meter.operation(label) as usage:
            action()
        calls = ", ".join(f"{name} {count:g}" for name, count in sorted(usage.calls.items()))
        total = f"{usage.total_wcu:g} WCU, {usage.total_rcu:g} RCU"
        lines.append(f"  {label}: {sum(usage.calls.values()):g} calls ({calls}), {total}")
        by_partition: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for item, units in usage.item_wcu.items():
            by_partition[_partition_of(item)][0] += units
        for item, units in usage.item_rcu.items():
            by_partition[_partition_of(item)][1] += units
        lines += [f"      {pk}: {w:g} WCU, {r:g} RCU" for pk, (w, r) in sorted(by_partition.items())]
        indexes = sorted({place for place, _ in usage.wcu if " index " in place})
        lines += [
            f"      {place}: {sum(units for (p, _), units in usage.wcu.items() if p == place):g} WCU"
            for place in indexes
        ]
    return "\n".join(['The lifecycle (docs/plans.md, "Lifecycle"), per operation and by partition key:', *lines])


def _partition_of(item: Any) -> str:
    """An item's partition key, from the meter's "table / pk / sk" name of it."""
    parts = str(item).split(" / ")
    return parts[1] if len(parts) > 2 else str(item)


def grant_steps(api: Any) -> list[tuple[str, Callable[[], object]]]:
    """What expiring grants cost (docs/plans.md, "Expiring grants"), on accounts put on a plan of
    one type (seats, 50) before the meter runs: a create of an account without a grant (today's),
    a grant's PUT, a create under it, the first create at its end (which ends it), the sweep's
    ending of one, and a sweep with none."""
    from dataclasses import replace

    from functions.adapters.grant_index import DynamoGrantIndex
    from functions.core import accounts, grants, plans
    from functions.core.model import NewResource

    later = WALL_CLOCK.now() + timedelta(hours=1)
    ends = (int(WALL_CLOCK.now().timestamp()) + 60) * 1000

    def after_the_end() -> str:
        return iso_timestamp(later)

    def give(account: str) -> None:
        change = replace(accounts.limit_change(60, WALL_CLOCK.epoch_ms()), grant_ends=ends)
        accounts.put_limit(api, Quota(account, "seats"), change, now_text)

    def create(account: str, resource_type: str = "seats", clock: Callable[[], str] = now_text) -> None:
        grants.admitting_past_grants(
            lambda: accounts.create_resource(api, Quota(account, resource_type), NewResource("r"), None, clock),
            api,
            clock,
            lambda: True,
        )

    index = DynamoGrantIndex(api._table)
    accounts.put_account(api, Quota("plain"), accounts.limit_change(10, WALL_CLOCK.epoch_ms()), now_text)
    plans.put_plan(api, "team", {"seats": plans.PlanQuota(50)}, now_text())
    for account in ("granted", "swept"):
        plans.join_plan(api, account, "team", WALL_CLOCK.epoch_ms(), now_text, lambda: True)
    return [
        ("a create of the default type, no plan, no grant (today's create)", lambda: create("plain", "default")),
        ("a create of a plan's type, no grant", lambda: create("granted")),
        ("a type's PUT with expiresAt (a grant: 50 -> 60)", lambda: give("granted")),
        ("a create under a standing grant", lambda: create("granted")),
        ("the first create at the grant's end (ends it, then admits)", lambda: create("granted", clock=after_the_end)),
        ("a grant given to be swept", lambda: give("swept")),
        ("a sweep ending one grant", lambda: grants.sweep_grants(api, index, later, timedelta(hours=6))),
        ("a sweep finding no grant ended", lambda: grants.sweep_grants(api, index, later, timedelta(hours=6))),
    ]


def shadow_steps(api: Any) -> list[tuple[str, Callable[[], object]]]:
    """What shadow mode costs (docs/plans.md, "Shadow mode"): a create of an enforced quota (today's)
    and one refused at its limit; a create of a shadow quota within its limit, and one past it (the
    refused conditional write, the read that finds no room, the reservation past the limit); a
    growth past the limit of a resource on shard 0, and of one on another shard (the units taken
    from shard 0's room in one transaction with that shard's reservation)."""
    from contextlib import suppress
    from dataclasses import replace

    from functions.core import accounts
    from functions.core.errors import LimitExceeded
    from functions.core.model import NewResource, QuotaMode

    def put(account: str, mode: str, limit: int = 1) -> None:
        change = replace(accounts.limit_change(limit, WALL_CLOCK.epoch_ms()), mode=mode)
        accounts.put_account(api, Quota(account), change, now_text)

    def create(account: str) -> None:
        with suppress(LimitExceeded):  # the enforced quota's 409 is what is measured
            accounts.create_resource(api, Quota(account), NewResource("r"), None, now_text)

    def grown_past_the_limit(account: str, shards: int) -> Callable[[], object]:
        """A shadow quota with a limit of `shards` units over `shards` active shards, its resource
        of 1 admitted by the last one (a create picks among the active shards but shard 0, and a
        dry one takes half its donor's room): its growth to 1 unit past the limit, to measure."""
        from functions.core.admission import Directory

        put(account, QuotaMode.SHADOW, limit=shards)
        directory = Directory()
        if shards > 1:
            api.set_active(Quota(account), 1, 1, shards)
            directory.learn(Quota(account), shards, shards)
        made = accounts.create_resource(api, Quota(account), NewResource("r"), None, now_text, directory=directory)
        assert made.resource.shard == shards - 1, made.resource
        return lambda: accounts.resize_resource(
            api, Quota(account), made.resource.resource_id, shards + 1, now_text, directory=directory
        )

    put("enforced", QuotaMode.ENFORCE)
    put("shadowed", QuotaMode.SHADOW)
    on_shard_0, on_shard_1 = grown_past_the_limit("grown", 1), grown_past_the_limit("busy", 2)
    return [
        ("a create of an enforced quota within its limit (today's create)", lambda: create("enforced")),
        ("a create of an enforced quota at its limit (409)", lambda: create("enforced")),
        ("a create of a shadow quota within its limit", lambda: create("shadowed")),
        ("a create of a shadow quota past its limit (admitted)", lambda: create("shadowed")),
        ("another create of that shadow quota past its limit", lambda: create("shadowed")),
        ("a growth past a shadow quota's limit, its resource on shard 0", on_shard_0),
        ("a growth past a shadow quota's limit, its resource on shard 1 (a busy quota)", on_shard_1),
    ]


# The projection's assumptions: a DynamoDB call's latency from a Lambda function in its region.
CALL_MS = 8
PROJECTED_ACCOUNTS = 100_000


def rollout_figures(api: Any, meter: CapacityMeter, units: Callable[[Usage], str], by_item: Any) -> list[str]:
    """A plan change's rollout (functions/core/rollout.py): the pager's page, one account given the
    new version, and the projection for PROJECTED_ACCOUNTS accounts at the worker's concurrency."""
    from functions.adapters.table_layout import ACCOUNTS_INDEX
    from functions.core import accounts, plans, rollout
    from infra.plan_rollout import ROLLOUT_WORKER_CONCURRENCY

    class Queue:
        def __init__(self) -> None:
            self.sent: list[rollout.Message] = []

        def send(self, messages: Any) -> None:
            self.sent += messages

    members = [f"member-{index:02d}" for index in range(20)]
    quotas = {"seats": plans.PlanQuota(50), "projects": plans.PlanQuota(10)}
    plans.put_plan(api, "fleet", quotas, now_text())
    for account in members:
        plans.join_plan(api, account, "fleet", WALL_CLOCK.epoch_ms(), now_text, lambda: True)
    plans.put_plan(api, "fleet", {**quotas, "seats": plans.PlanQuota(60)}, now_text())
    queue = Queue()
    with meter.operation("the pager: one page of the registry (20 accounts), its messages queued") as paged:
        rollout.page(api, queue, rollout.Page("fleet", 2))
    applies = [message for message in queue.sent if isinstance(message, rollout.Apply)]
    with meter.operation("the worker: one account given the new version (one quota changed of 2)") as one:
        rollout.apply(api, rollout.Apply("fleet", 2, (members[0],)), now_text, lambda: True)
    with meter.operation("the worker: the same message again (the account has it)") as again:
        rollout.apply(api, rollout.Apply("fleet", 2, (members[0],)), now_text, lambda: True)
    accounts.get_account(api, members[0], now_text())  # (keeps the account read in the report's reach)

    calls = sum(one.calls.values())
    pages = -(-PROJECTED_ACCOUNTS // rollout.PAGE_SIZE)
    messages = -(-PROJECTED_ACCOUNTS // rollout.ACCOUNTS_PER_MESSAGE)
    message_seconds = rollout.ACCOUNTS_PER_MESSAGE * calls * CALL_MS / 1000
    minutes = messages / ROLLOUT_WORKER_CONCURRENCY * message_seconds / 60
    # Only the accounts index's entry is in the plan's partition; the activity and pending indexes'
    # entries spread over their buckets (and the activity entry's key moves only when the account's
    # last write was in another minute: a GSI key change writes it twice).
    index_wcu = sum(u for (place, _), u in one.wcu.items() if place.endswith(f" index {ACCOUNTS_INDEX.name}"))
    return [
        f"  {label}: {units(usage)}"
        for label, usage in (
            ("the pager: one page of the registry (20 accounts), its messages queued", paged),
            ("the worker: one account given the new version (one quota changed of 2)", one),
            ("the worker: the same message again (the account has it)", again),
        )
    ] + [
        *by_item(one),
        f"  the pager queued {len(applies)} apply messages of up to {rollout.ACCOUNTS_PER_MESSAGE} accounts",
        f"  projection for {PROJECTED_ACCOUNTS:,} accounts on one plan (one quota changed; {CALL_MS} ms a call;"
        f" the worker's concurrency {ROLLOUT_WORKER_CONCURRENCY}): {pages} page messages and {messages:,} apply"
        f" messages; {PROJECTED_ACCOUNTS * calls:,.0f} table calls,"
        f" {PROJECTED_ACCOUNTS * one.total_wcu:,.0f} WCU ({PROJECTED_ACCOUNTS * index_wcu:,.0f} of them the"
        f" accounts index's, all in the plan's partition), {PROJECTED_ACCOUNTS * one.total_rcu:,.0f} RCU;"
        f" about {minutes:.1f} minutes, {PROJECTED_ACCOUNTS * one.total_wcu / (minutes * 60):,.0f} WCU/s spread over"
        f" the accounts' own partitions ({one.total_wcu:g} WCU each, once) and"
        f" {PROJECTED_ACCOUNTS * index_wcu / (minutes * 60):,.0f} WCU/s on the plan's index partition (1,000 a"
        f" partition)",
    ]


def resize_report(emulator_url: str, runs: int = 20) -> str:
    """What a resize costs (docs/admission.md, "Resizing"), beside a create of the same amount: reserve
    then settle (a create of 4,000 units grown to 4,500 and settled at 3,200), a growth refused at
    the limit, a keyed retry of a resize that landed, and the consumer's count of each resize."""
    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.counting_store import DynamoCountingStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.core import accounts
    from functions.core.errors import LimitExceeded
    from functions.core.model import NewResource
    from tests.support.stream import StreamTap, process_stream_records
    from tests.support.tables import create_table

    dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
    stream_arn = create_table(dynamodb, "capacity-resizes")
    meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator_url))
    table = DynamoTable(dynamodb, "capacity-resizes")
    api, counting = DynamoApiStore(table), DynamoCountingStore(table, WALL_CLOCK)
    tap = StreamTap(boto3.client("dynamodbstreams", endpoint_url=emulator_url), stream_arn)
    quota = Quota("resized")
    accounts.put_account(api, quota, accounts.limit_change(10_000_000, WALL_CLOCK.epoch_ms()), now_text)
    first = accounts.create_resource(api, quota, NewResource("warm", amount=2), None, now_text)
    process_stream_records(counting, tap.drain())  # the counter's first count decides its headroom
    accounts.delete_resource(api, quota, first.resource.resource_id, now_text)
    process_stream_records(counting, tap.drain())

    def consume(operation: str) -> None:
        with meter.operation(operation):
            process_stream_records(counting, tap.drain())

    for run in range(runs):
        with meter.operation("a create of 4,000 units"):
            created = accounts.create_resource(api, quota, NewResource(f"call-{run}", amount=4000), None, now_text)
        consume("the consumer's count of the create")
        resource_id = created.resource.resource_id
        with meter.operation("a growth to 4,500 units"):
            accounts.resize_resource(api, quota, resource_id, 4500, now_text)
        consume("the consumer's count of a resize")
        with meter.operation("a shrink to 3,200 units (keyed)"):
            accounts.resize_resource(api, quota, resource_id, 3200, now_text, idempotency_key=f"settle-{run}")
        with meter.operation("its retry after it landed (a replay)"):
            accounts.resize_resource(api, quota, resource_id, 3200, now_text, idempotency_key=f"settle-{run}")
        consume("the consumer's count of a resize")
    full = Quota("resized-full")
    accounts.put_account(api, full, accounts.limit_change(100, WALL_CLOCK.epoch_ms()), now_text)
    held = accounts.create_resource(api, full, NewResource("all", amount=100), None, now_text).resource
    for _ in range(runs):
        with meter.operation("a growth refused at the limit"):
            try:
                accounts.resize_resource(api, full, held.resource_id, 101, now_text)
            except LimitExceeded:
                continue
        raise AssertionError("a growth past the limit was admitted")

    def units(usage: Usage) -> str:
        n = usage.runs or 1
        calls = ", ".join(f"{api} {count / n:g}" for api, count in sorted(usage.calls.items()))
        by_item: dict[str, float] = {}
        for item, wcu in usage.item_wcu.items():  # each run's resource is another item: one line for them
            family = re.sub(r"RESOURCE#\S+", "RESOURCE#<id>", item.split(" / ", 1)[-1])
            by_item[family] = by_item.get(family, 0) + wcu
        where = ", ".join(f"{item} {wcu / n:g}" for item, wcu in sorted(by_item.items()))
        return (
            f"{sum(usage.calls.values()) / n:g} calls ({calls}), {usage.total_wcu / n:g} WCU ({where}), "
            f"{usage.total_rcu / n:g} RCU"
        )

    lines = [f"  {operation}: {units(usage)}" for operation, usage in meter.usage.items() if operation != "(unnamed)"]
    return "\n".join([f"resizes ({runs} of each, per operation):", *lines])


def refusal_report(emulator_url: str, flood: int = 50) -> str:
    """What Limit Refused events cost (docs/events.md, "Refused creates"): a refused create (the
    calls it made before them; it only logs a line more), and per quota and minute the aggregator's
    update of the window (one per batch of lines; a flood of `flood` refusals in one batch here) and
    the emitter's announcement. Their SQS message is not DynamoDB's, so not metered here."""
    from datetime import UTC, datetime

    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.adapters.refused_windows import DynamoRefusedWindows
    from functions.core import accounts
    from functions.core.errors import LimitExceeded
    from functions.core.model import NewResource
    from functions.core.refusals import Refusal, announce, windows_of
    from tests.support.tables import create_table

    dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
    create_table(dynamodb, "capacity-refusals")
    meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator_url))
    table = DynamoTable(dynamodb, "capacity-refusals")
    api, windows = DynamoApiStore(table), DynamoRefusedWindows(table)
    quota = Quota("refused")
    accounts.put_account(api, quota, accounts.limit_change(1, WALL_CLOCK.epoch_ms()), now_text)
    accounts.create_resource(api, quota, NewResource("vm", {}), None, now_text)
    with meter.operation("a refused create") as refused:
        for _ in range(flood):
            try:
                accounts.create_resource(api, quota, NewResource("vm", {}), None, now_text)
            except LimitExceeded:
                continue
            raise AssertionError("a create at the limit was admitted")
    minute = datetime(2026, 11, 25, 13, 37, tzinfo=UTC)
    [count] = windows_of(Refusal(quota, 1, minute, str(index)) for index in range(flood))
    with meter.operation("the aggregator's batch") as aggregated:
        windows.add(count, minute)
    with meter.operation("the emitter's announcement") as announced:
        announce(count.window, windows, minute)

    def units(usage: Usage, runs: int = 1) -> str:
        calls = ", ".join(f"{api} {number / runs:g}" for api, number in sorted(usage.calls.items()))
        return (
            f"{sum(usage.calls.values()) / runs:g} calls ({calls}), {usage.total_wcu / runs:g} WCU, "
            f"{usage.total_rcu / runs:g} RCU"
        )

    return "\n".join(
        [
            f"refused creates (Limit Refused events), {flood} refused in one minute on one quota:",
            f"  a refused create: {units(refused, flood)} (as before the events: it logs a line more)",
            f"  the aggregator, one batch of the minute's lines: {units(aggregated)} (and one SQS message)",
            f"  the emitter, once per minute: {units(announced)} (all on partition key {keys.account_pk(quota)})",
        ]
    )


def dead_lease_report(emulator_url: str, dead: int = 60) -> str:
    """A shard carrying `dead` leases of requests that died (as a throttled shard gathers them
    between sweeps; 60 were found on one in a scaled run, docs/scaling.md): what a create costs
    with them, what settling them costs one write each (as the sweeper did) and together (as it
    and a write that sees them do now), and what a create costs after."""
    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.core import accounts
    from functions.core.leases import RELEASE_RESERVATION, Lease, LeaseKind, settle_dead_leases
    from functions.core.model import NewResource
    from tests.support.tables import create_table

    dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
    create_table(dynamodb, "capacity-dead")
    meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator_url))
    api = DynamoApiStore(DynamoTable(dynamodb, "capacity-dead"))
    # The create's own clean-up stays off until it is measured: a write that sees 4 would settle them.
    leaving = Directory(ShardingSettings(settle_dead_at=dead + 1))
    long_ago = iso_timestamp(datetime.now(UTC) - timedelta(minutes=2))

    def plant(name: Quota) -> list[Lease]:
        """`dead` creates that reserved and died before their put: leases 2 minutes old."""
        accounts.put_account(api, name, accounts.limit_change(1_000, WALL_CLOCK.epoch_ms()), now_text)
        for number in range(dead):
            lease = Lease(LeaseKind.RESERVATION, f"{number:016x}", f"never-put-{number}", long_ago)
            assert api.reserve_on(name, lease) is not None
        return list(api.read_shards(name, [0])[0].leases)

    def create(name: Quota, operation: str, directory: Directory = leaving) -> Usage:
        with meter.operation(operation) as usage:
            accounts.create_resource(api, name, NewResource("vm", {"size": 2}), None, now_text, directory=directory)
        return usage

    one_each, together = plant(Quota("one-each")), plant(Quota("together"))
    loaded = create(Quota("together"), "create, 60 dead leases on its shard")
    with meter.operation("settle one write each") as each:
        for lease in one_each:  # the sweeper's loop before: a read of the resource, a write of the shard
            assert api.get_resource(Quota("one-each"), lease.resource_id) is None
            api.settle(Quota("one-each"), lease, RELEASE_RESERVATION, None)
    with meter.operation("settle together") as joint:
        settle_dead_leases(
            api, Quota("together"), together, expired_before=iso_timestamp(datetime.now(UTC) - timedelta(hours=24))
        )
    after = create(Quota("together"), "create, after")
    plant(Quota("on-sight"))
    seeing = create(Quota("on-sight"), "create that settles them", Directory())
    left = len(api.read_shards(Quota("on-sight"), [0])[0].leases)

    def units(usage: Usage) -> str:
        return f"{sum(usage.calls.values()):.0f} calls, {usage.total_wcu:.0f} WCU, {usage.total_rcu:.1f} RCU"

    return "\n".join(
        [
            f"dead leases: a shard carrying {dead} (one account item, {dead} creates that died after reserving):",
            f"  a create meanwhile: {units(loaded)}",
            f"  settling them one write each (the sweeper before): {units(each)}",
            f"  settling them together (the sweeper now; one read of their resources): {units(joint)}",
            f"  a create after: {units(after)}",
            f"  a create that sees them settles them after its own work: {units(seeing)}; {left} left",
        ]
    )


def busiest_tenant_report(meter: CapacityMeter, store: Any, clock_ms: list[int], served_by: int = 400) -> str:
    """The tenant of 10,000 create+delete iterations a second: 20,000 requests a second (its rate
    raised to 25,000), served by `served_by` execution environments (400 at 50 ms a request), in
    the default 2 s windows. Every environment leases a few times a window, so what one window item
    takes grows with the environments, not the requests (functions/core/rate_limits.py)."""
    from functions.core.model import TenantRate
    from functions.core.rate_limits import TenantLimiter

    rate, per_window, windows = TenantRate(requests_per_second=25_000, window_seconds=2), 40_000, 3
    environments = [TenantLimiter(store, rate, clock_ms=lambda: clock_ms[0]) for _ in range(served_by)]
    admitted = 0
    with meter.operation("busiest tenant") as usage:
        for _ in range(windows):
            for _ in range(per_window // served_by):
                admitted += sum(environment.admit("busiest").allowed for environment in environments)
            clock_ms[0] += rate.window_ms
    item, most = hottest(usage.item_wcu)
    per_second = most / windows / rate.window_seconds
    return (
        f"  the busiest tenant, 20,000 requests/s (rate 25,000) over {served_by} environments, 2 s windows, "
        f"{windows} windows: {usage.total_wcu / (windows * per_window):.4f} WCU a request over {rate.parts} "
        f"item(s) a window; admitted {admitted:,} of {windows * per_window:,}; "
        f"hottest item {per_second:.0f} WCU/s ({item}), {'under' if per_second < 1000 else 'OVER'} an item's 1,000"
    )


def hot_report(meter: CapacityMeter, hot: Usage, iterations: int, batch: int, rate: float, warmup: int) -> str:
    """One busy account: the stream consumer gets its records in batches, as Lambda delivers a busy
    shard's, and counts each batch of an account in one transaction (docs/scaling.md)."""
    consumer = meter.usage["consumer record"]
    records = 2 * iterations  # a create's INSERT and a delete's soft delete carry counting work
    counter_item = f" / {keys.COUNTER_SORT_KEY}"
    counter = sum(units for item, units in consumer.item_wcu.items() if item.endswith(counter_item))
    lines = [
        f"one busy account at a projected {rate:,.0f} iterations/s, {iterations} iterations after {warmup} "
        f"of warm-up, records in batches of {batch}:",
        f"  {hot.total_wcu:.2f} WCU per iteration; the stream consumer {consumer.total_wcu / records:.2f} WCU "
        f"per counted record, {counter / 2 / records:.3f} writes to the counter item per counted record",
        "  projected AWS ceilings, iterations per second:",
    ]
    for label, (place, rate) in ceilings(hot).items():
        lines.append(f"    {rate:>10,.0f}/s  {label}: {place}")
    return "\n".join(lines)


def types_report(emulator_url: str, args: Any) -> str:
    """One account with `args.types` resource types (its default type and others, each with its own
    keys: docs/scaling.md). Spread: quiet creates and deletes over every type in turn, each record
    counted alone. Busy: one type at the busy account's projected rate, its shards grown, its
    records in batches, beside quiet siblings that each make one create+delete every 10 of its
    iterations. Per iteration: the hottest item and table partition key, and the partition keys
    each type writes."""
    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.counting_store import DynamoCountingStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.core import accounts
    from functions.core.model import NewResource
    from tests.support.stream import StreamTap, process_stream_records
    from tests.support.tables import create_table

    quotas = [Quota("acct-types")] + [Quota("acct-types", f"type-{number}") for number in range(1, args.types)]

    def system(name: str) -> tuple[CapacityMeter, Any, Any, StreamTap]:
        dynamodb = boto3.client("dynamodb", endpoint_url=emulator_url)
        stream_arn = create_table(dynamodb, name)
        meter = CapacityMeter(dynamodb, reader=boto3.client("dynamodb", endpoint_url=emulator_url))
        the_table = DynamoTable(dynamodb, name)
        tap = StreamTap(boto3.client("dynamodbstreams", endpoint_url=emulator_url), stream_arn)
        api = DynamoApiStore(the_table)
        for quota in quotas:
            accounts.put_limit(api, quota, accounts.limit_change(1_000_000, WALL_CLOCK.epoch_ms()), now_text)
        process_stream_records(DynamoCountingStore(the_table, WALL_CLOCK), tap.drain())
        return meter, api, DynamoCountingStore(the_table, WALL_CLOCK), tap

    def partition_keys(usage: Usage, quota: Quota) -> dict[str, float]:
        """The table partition keys of `quota` written, with their WCU."""
        return {
            key: units for (place, key), units in usage.wcu.items() if " index " not in place and owner(key) == quota
        }

    def owner(partition_key: str) -> Quota | None:
        return keys.quota_of(partition_key)

    # Spread: one create+delete on each type in turn, each record counted alone.
    meter, api, counting, tap = system("capacity-types-spread")
    for _ in range(args.iterations):
        for quota in quotas:
            with meter.operation("create"):
                created = accounts.create_resource(api, quota, NewResource("vm", {"size": 2}), None, now_text)
            with meter.operation("consumer record"):
                process_stream_records(counting, tap.drain())
            with meter.operation("delete"):
                accounts.delete_resource(api, quota, created.resource.resource_id, now_text)
            with meter.operation("consumer record"):
                process_stream_records(counting, tap.drain())
    spread = per_iteration(meter, args.iterations * len(quotas))
    item, item_units = hottest(spread.item_wcu)
    table_keys = {key: units for (place, key), units in spread.wcu.items() if " index " not in place}
    key, key_units = hottest(table_keys)
    lines = [
        f"{len(quotas)} resource types on one account ({', '.join(quota.resource_type for quota in quotas)}):",
        f"  spread: {args.iterations} create+delete iterations on each type in turn, records counted alone; "
        f"per iteration (one type's create+delete): {spread.total_wcu:.2f} WCU",
        f"    hottest item {item_units:.2f} WCU ({item}); hottest table partition key {key_units:.2f} WCU ({key})",
        f"    table partition keys written: {len(table_keys)}, "
        + ", ".join(f"{name} {units * len(quotas):.2f}" for name, units in sorted(table_keys.items()))
        + " WCU per iteration of its own type",
    ]

    # Busy: one type at the projected rate, its siblings quiet beside it.
    meter, api, counting, tap = system("capacity-types-busy")
    busy, quiet = quotas[1] if len(quotas) > 1 else quotas[0], [quota for quota in quotas if quota != quotas[1]]
    clock = SimulatedClock(args.rate)
    directory = Directory(ShardingSettings(min_window=SIMULATED_WINDOW), clock=clock, rng=random.Random(1))  # noqa: S311
    waiting: list[dict[str, Any]] = []

    def consume(operation: str, last: bool = False) -> None:
        waiting.extend(tap.drain())
        while waiting and (len(waiting) >= args.batch or last):
            batch, waiting[:] = waiting[: args.batch], waiting[args.batch :]
            with meter.operation(operation):
                process_stream_records(counting, batch)

    alive: list[str] = []

    def busy_iteration(measured: bool) -> None:
        clock.tick()
        with meter.operation("busy create" if measured else "warm-up"):
            created = accounts.create_resource(
                api, busy, NewResource("vm", {"size": 2}), None, clock.text, directory=directory
            )
        alive.append(created.resource.resource_id)
        if len(alive) > args.batch:
            with meter.operation("busy delete" if measured else "warm-up"):
                accounts.delete_resource(api, busy, alive.pop(0), clock.text, directory=directory)

    for _ in range(args.warmup):
        busy_iteration(measured=False)
        consume("warm-up")
    meter.usage.clear()
    quiet_iterations = 0
    for number in range(args.hot_iterations):
        busy_iteration(measured=True)
        if number % 10 == 0:
            for quota in quiet:
                with meter.operation("quiet create"):
                    created = accounts.create_resource(api, quota, NewResource("vm"), None, clock.text)
                with meter.operation("quiet delete"):
                    accounts.delete_resource(api, quota, created.resource.resource_id, clock.text)
            quiet_iterations += 1
        consume("consumer batch")
    consume("consumer batch", last=True)
    total = Usage()
    for name in ("busy create", "busy delete", "quiet create", "quiet delete", "consumer batch"):
        usage = meter.usage.get(name)
        if usage is None:
            continue
        for place, units in usage.wcu.items():
            total.wcu[place] += units
        for each, units in usage.item_wcu.items():
            total.item_wcu[each] += units
    busy_ops = [meter.usage[name] for name in ("busy create", "busy delete") if name in meter.usage]
    strays = sorted(
        {key for usage in busy_ops for (place, key) in usage.wcu if " index " not in place and owner(key) != busy}
    )
    busy_items = {each: units for each, units in total.item_wcu.items() if owner(each.split(" / ")[1]) == busy}
    item, item_units = hottest({each: units / args.hot_iterations for each, units in busy_items.items()})
    busy_keys = partition_keys(total, busy)
    key, key_units = hottest(busy_keys)
    lines += [
        f"  busy: {busy.resource_type} at a projected {args.rate:,.0f} iterations/s ({args.hot_iterations} "
        f"iterations after {args.warmup} of warm-up, records in batches of {args.batch}), "
        f"{', '.join(quota.resource_type for quota in quiet)} one create+delete each every 10 of its iterations:",
        f"    {busy.resource_type}: hottest item {item_units:.2f} WCU per busy iteration ({item}); "
        f"hottest table partition key {key_units / args.hot_iterations:.2f} WCU ({key}); "
        f"{len(busy_keys)} partition keys of its own written",
        f"    table partition keys outside {busy.resource_type}'s own that its creates and deletes wrote: "
        f"{len(strays)}{' (' + ', '.join(strays) + ')' if strays else ''}",
    ]
    for quota in quiet:
        own = partition_keys(total, quota)
        its_items = {each: units for each, units in total.item_wcu.items() if owner(each.split(" / ")[1]) == quota}
        item, item_units = hottest(its_items)
        lines.append(
            f"    {quota.resource_type}: {len(own)} partition key(s) written, "
            + ", ".join(f"{name} {units / quiet_iterations:.2f}" for name, units in sorted(own.items()))
            + f" WCU per iteration of its own; hottest item {item_units / quiet_iterations:.2f} WCU ({item})"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
