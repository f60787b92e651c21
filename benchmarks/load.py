"""The paper's load test against the local system: constant arrival, create then delete.

    make bench-load                                    # 20 s at 8 iterations/s on one shared account
    make bench-load ARGS='--rate 15 --duration 30 --accounts 10'
    make bench-load ARGS='--types 3'                   # 3 resource types on the account, used in turn

Each iteration starts on schedule (a constant arrival rate, whatever the answers take) and makes a
POST then a DELETE of what it created, as the paper's k6 script does; with `--types N` the
iterations go to each account's N limits (its default type, `type-1`, ...) in turn. It calls the
API with the product's client (hybrid_counter_client) making one request per call, so each sample
is one request's answer; its creates carry an Idempotency-Key, as that client's always do (unlike
the paper's), which costs each create one GetItem (a read: not in the write ceiling below). It prints, and
writes as JSON and PNG plots under benchmarks/results/:

* the achieved rate, p50/p95/p99 latency per operation, failures by status;
* the time from the last answer until every limit's eventual and best-effort counters equal
  what exists (nothing after create-then-delete, but what a throttled delete left);
* the **emulator ceiling** measured in the same run (raw conditional UpdateItems per second from
  4 client threads, divided by the DynamoDB calls one iteration makes, measured with
  `make bench-capacity`), and the achieved rate as a share of it. These machines are shared and
  noisy: compare a ratio, never an absolute rate.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from hybrid_counter_client import (
    Account,
    HybridCounterError,
    LimitsClient,
    NoResponse,
    ResourceNotFound,
    ResourcePage,
    ResourceType,
    ServerError,
    TypedResourcePage,
)

from functions.adapters import table_layout
from infra import options
from local.capacity.billing import item_size
from local.capacity.limits import item_of_place
from local.emulator import FLAVOURS, EmulatorProcess
from local.partition_throttling import read_throttles
from local.product import SINGLE_ATTEMPT, admin_client, by_family, new_account, runtime_settings, scaled_environment
from local.request_counts import read_request_counts, read_request_cpu
from local.runtime import LocalRuntime, RuntimeSettings

T = TypeVar("T")

RESULTS = os.path.join(os.path.dirname(__file__), "results")
# DynamoDB calls per create+delete iteration, measured by `make bench-capacity`:
# create 3 (UpdateItem, PutItem, UpdateItem), a quiet account's delete 3 (UpdateItem),
# the consumer 2 TransactWriteItems; stream reads are not counted. tests/handler/test_capacity_meter.py
# checks the sum against the real flows.
CALLS_PER_ITERATION = 8
LOAD_LIMIT = 1_000_000  # every limit's: the load measures throughput, never refusals


@dataclass
class Sample:
    operation: str
    started: float  # seconds since the run began
    seconds: float
    status: int | str


@dataclass
class LoadReport:
    rate: float
    duration: float
    accounts: int
    types: int = 1  # limits per account: its default type and `type-1` ..
    cold_starts: bool = False
    emulator_flavour: str = "tuned"
    partition_limits: str | None = None
    stream_batching_window_seconds: int | None = None
    partition_throttles: dict[str, int] = field(default_factory=dict)  # the emulator's refusals, busiest places
    throttles_by_family: dict[str, int] = field(default_factory=dict)  # ... added up per kind of item or index
    # The busiest refused items' sizes in bytes after the run: a write is billed per KB of the item
    refused_item_bytes: dict[str, int] = field(default_factory=dict)
    # Iterations whose create or delete had no definite answer, retried after the load (settle)
    settled_after_the_load: int = 0
    account_concurrency: int = 0
    iterations_started: int = 0
    iterations_completed: int = 0
    achieved_rate: float = 0.0
    latency_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    failures: int = 0
    seconds_to_converge: float | None = None
    emulator_calls_per_second: float = 0.0
    ceiling_iterations_per_second: float = 0.0
    share_of_ceiling: float = 0.0
    # What the load asked of the emulator, per completed iteration, by request (stream and queue
    # polls included): the measured side of CALLS_PER_ITERATION.
    emulator_requests_per_iteration: dict[str, float] = field(default_factory=dict)
    emulator_cpu_seconds_per_iteration: float = 0.0
    # CPU the emulator spent answering each kind of request, per completed iteration (ms)
    emulator_cpu_ms_per_iteration_by_request: dict[str, float] = field(default_factory=dict)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def measure_emulator(client: Any, table: str, seconds: float = 4.0, threads: int = 4) -> float:
    """Raw conditional UpdateItems per second against the emulator, from `threads` clients."""
    stop = time.monotonic() + seconds
    done = [0] * threads

    def hammer(index: int) -> None:
        while time.monotonic() < stop:
            # A new item each time, so scaled partition limits (--partition-limits) never hold it back.
            key = {"pk": {"S": f"CEILING#{index}#{done[index]}"}, "sk": {"S": "COUNTER"}}
            client.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="ADD n :one",
                ConditionExpression="attribute_not_exists(n) OR n < :cap",
                ExpressionAttributeValues={":one": {"N": "1"}, ":cap": {"N": "1000000000"}},
            )
            done[index] += 1

    workers = [threading.Thread(target=hammer, args=(index,)) for index in range(threads)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(done) / (time.monotonic() - started)


@dataclass(frozen=True)
class Limit:
    """One limit the load works on: an account's default type (`resource_type` None) or one of its
    other types, called through the product's client."""

    account_id: str
    resource_type: str | None = None

    def __str__(self) -> str:
        account = f"/accounts/{self.account_id}"
        return account if self.resource_type is None else f"{account}/types/{self.resource_type}"

    def create(self, client: LimitsClient, name: str) -> str:
        if self.resource_type is None:
            return client.create_resource(self.account_id, name).resource_id
        return client.create_typed_resource(self.account_id, self.resource_type, name).resource_id

    def delete(self, client: LimitsClient, resource_id: str) -> None:
        if self.resource_type is None:
            client.delete_resource(self.account_id, resource_id)
        else:
            client.delete_typed_resource(self.account_id, self.resource_type, resource_id)

    def page(self, client: LimitsClient, cursor: str | None) -> tuple[list[str], str | None]:
        if self.resource_type is None:
            page: ResourcePage | TypedResourcePage = client.list_resources_page(
                self.account_id, limit=100, cursor=cursor
            )
        else:
            page = client.list_typed_resources_page(self.account_id, self.resource_type, limit=100, cursor=cursor)
        return [item.resource_id for item in page.items], page.next_cursor

    def usage(self, client: LimitsClient) -> Account | ResourceType:
        if self.resource_type is None:
            return client.get_account(self.account_id)
        return client.get_type(self.account_id, self.resource_type)


# (a limit, the resource whose delete had no definite answer, or None)
Unsettled = tuple[Limit, str | None]


def new_limits(client: LimitsClient, accounts: int, types: int) -> list[Limit]:
    """`accounts` fresh accounts, each with `types` limits (its default type, then `type-1` ..)."""
    limits: list[Limit] = []
    for _ in range(accounts):
        account_id = new_account(client, prefix="load", limit=LOAD_LIMIT)
        limits.append(Limit(account_id))
        for number in range(1, types):
            client.put_type_limit(account_id, f"type-{number}", limit=LOAD_LIMIT)
            limits.append(Limit(account_id, f"type-{number}"))
    return limits


def answer_of(error: HybridCounterError) -> int | str:
    """How a sample names a failed request: its status, or that no answer came."""
    if error.status is not None:
        return error.status
    return f"no answer ({type(error.__cause__ or error).__name__})"


def run_load(
    client: LimitsClient, limits: list[Limit], rate: float, duration: float
) -> tuple[list[Sample], float, list[Unsettled]]:
    """Runs the load with `client`, which makes one request per call (SINGLE_ATTEMPT): each sample
    is one request's answer. Returns its samples, its length, and the iterations whose create or
    delete had no definite answer (a 5xx or none: it may or may not have landed), for `settle_all`
    once the figures are read."""
    samples: list[Sample] = []
    unsettled: list[Unsettled] = []
    lock = threading.Lock()
    began = time.monotonic()

    def timed(operation: str, success: int, call: Callable[[], T]) -> T | HybridCounterError:
        started = time.monotonic()
        outcome: T | HybridCounterError
        try:
            outcome = call()
            status: int | str = success
        except HybridCounterError as error:
            outcome, status = error, answer_of(error)
        with lock:
            samples.append(Sample(operation, started - began, time.monotonic() - started, status))
        return outcome

    def undecided(outcome: object) -> bool:
        return isinstance(outcome, HybridCounterError) and (outcome.status is None or outcome.status >= 500)

    def iteration(number: int) -> None:
        limit = limits[number % len(limits)]
        created = timed("create", 201, lambda: limit.create(client, f"load-{number}"))
        if undecided(created):
            with lock:
                unsettled.append((limit, None))
        elif isinstance(created, str):
            resource_id = created
            deleted = timed("delete", 204, lambda: limit.delete(client, resource_id))
            if undecided(deleted):
                with lock:
                    unsettled.append((limit, resource_id))

    total = int(rate * duration)
    with ThreadPoolExecutor(max_workers=512) as pool:
        for number in range(total):
            time.sleep(max(0.0, began + number / rate - time.monotonic()))  # constant arrival
            pool.submit(iteration, number)
            if number % max(1, int(rate)) == 0:
                done = sum(1 for sample in samples if sample.operation == "delete")
                print(f"\r  {time.monotonic() - began:5.1f} s  started {number + 1}/{total}  done {done}", end="")
    print()
    return samples, time.monotonic() - began, unsettled


def settle_all(client: LimitsClient, unsettled: list[Unsettled], attempts: int = 30) -> Counter[Limit]:
    """Settles what the load left unknown, as a client would: each delete without a definite answer
    is retried until 204 or 404; then, if a create had none (its Idempotency-Key is the client's,
    made for that one call), every resource its limit still lists is a leftover and is deleted.
    Returns the resources left per limit: none, unless a delete kept failing."""
    left: Counter[Limit] = Counter()
    for limit, resource_id in unsettled:
        if resource_id is not None and not delete_until_answered(client, limit, resource_id, attempts):
            left[limit] += 1
    for limit in sorted({limit for limit, resource_id in unsettled if resource_id is None}, key=str):
        for leftover in listed_resources(client, limit):
            if not delete_until_answered(client, limit, leftover, attempts):
                left[limit] += 1
    return left


def delete_until_answered(client: LimitsClient, limit: Limit, resource_id: str, attempts: int) -> bool:
    """True once a delete answers 204 or 404 (gone either way)."""
    for _ in range(attempts):
        try:
            limit.delete(client, resource_id)
            return True
        except ResourceNotFound:
            return True
        except HybridCounterError:
            pass  # no answer, or one that may change: ask again
        time.sleep(1.0)
    return False


def listed_resources(client: LimitsClient, limit: Limit, attempts: int = 30) -> list[str]:
    """Every resource a limit lists, page by page (a page refused under scaled partition limits is
    read again)."""
    found: list[str] = []
    cursor: str | None = None
    for _ in range(attempts):
        try:
            items, cursor = limit.page(client, cursor)
        except (ServerError, NoResponse):
            time.sleep(1.0)
            continue
        found += items
        if cursor is None:
            return found
    raise RuntimeError(f"could not list the resources of {limit}")


def wait_until_converged(
    client: LimitsClient, live: Counter[Limit], limits: list[Limit], timeout: float = 120.0, every: float = 0.1
) -> float | None:
    """Seconds until every limit's eventual and best-effort counters equal what exists, polled
    `every` seconds."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        views: dict[Limit, Account | ResourceType] = {}
        for limit in limits:
            # A read refused under load (503 after the emulator's partition limits) is not an answer.
            with contextlib.suppress(HybridCounterError):
                views[limit] = limit.usage(client)
        if len(views) == len(limits) and all(
            view.eventual == view.best_effort == live[limit] for limit, view in views.items()
        ):
            return time.monotonic() - started
        time.sleep(every)
    return None


def summarize(report: LoadReport, samples: list[Sample], elapsed: float) -> None:
    deletes = [s for s in samples if s.operation == "delete"]
    report.iterations_completed = sum(1 for s in deletes if s.status == 204)
    report.achieved_rate = round(report.iterations_completed / elapsed, 2)
    statuses = Counter(f"{s.operation} {s.status}" for s in samples)
    report.statuses = dict(sorted(statuses.items()))
    report.failures = sum(count for name, count in statuses.items() if name not in ("create 201", "delete 204"))
    groups = {
        "create": [s for s in samples if s.operation == "create"],
        "delete": [s for s in samples if s.operation == "delete"],
        # Beyond the API function's concurrency: the stack's 503 for a throttled invocation.
        "throttled (503)": [s for s in samples if s.status == 503],
    }
    for group, members in groups.items():
        if not members:
            continue
        latencies = [s.seconds * 1000 for s in members]
        report.latency_ms[group] = {
            "p50": round(percentile(latencies, 0.50), 1),
            "p95": round(percentile(latencies, 0.95), 1),
            "p99": round(percentile(latencies, 0.99), 1),
            "mean": round(statistics.fmean(latencies), 1) if latencies else 0.0,
        }


def plot(samples: list[Sample], report: LoadReport, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (latency, throughput) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    seconds = int(max((s.started for s in samples), default=0)) + 1
    for operation, colour in (("create", "tab:blue"), ("delete", "tab:orange")):
        for share, style in ((0.50, "-"), (0.95, "--"), (0.99, ":")):
            series = []
            for second in range(seconds):
                values = [s.seconds * 1000 for s in samples if s.operation == operation and int(s.started) == second]
                series.append(percentile(values, share) if values else float("nan"))
            latency.plot(range(seconds), series, style, color=colour, label=f"{operation} p{int(share * 100)}")
        done = Counter(int(s.started) for s in samples if s.operation == operation and s.status in (201, 204))
        failed = Counter(int(s.started) for s in samples if s.operation == operation and s.status not in (201, 204))
        throughput.plot(range(seconds), [done[t] for t in range(seconds)], color=colour, label=f"{operation} ok")
        throughput.plot(
            range(seconds), [failed[t] for t in range(seconds)], color=colour, alpha=0.4, label=f"{operation} failed"
        )
    latency.set_ylabel("latency (ms)")
    latency.set_yscale("log")
    latency.legend(fontsize="small", ncol=2)
    latency.set_title(
        f"{report.rate}/s offered, {report.achieved_rate}/s achieved, "
        f"{report.share_of_ceiling:.0%} of the emulator ceiling ({report.ceiling_iterations_per_second:.1f}/s)"
    )
    throughput.set_ylabel("requests started per second")
    throughput.set_xlabel("seconds into the run")
    throughput.legend(fontsize="small", ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def window_context(seconds: int | None) -> dict[str, str]:
    return {} if seconds is None else {options.STREAM_BATCHING_WINDOW.key: str(seconds)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=8.0, help="iterations (create then delete) started per second")
    parser.add_argument(
        "--ceiling-share",
        type=float,
        default=None,
        help="offer this share of the emulator ceiling measured in the run (0.8, 2) instead of --rate",
    )
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load")
    parser.add_argument("--accounts", type=int, default=1, help="1: the paper's one shared account; more: a mix")
    parser.add_argument(
        "--types", type=int, default=1, help="limits per account (its default type, type-1, ..), used in turn"
    )
    parser.add_argument("--name", default=None, help="file name under benchmarks/results/ (default from the rate)")
    parser.add_argument(
        "--account-concurrency",
        type=int,
        default=RuntimeSettings.account_concurrency,
        help="sandboxes of the API function, as `make run --account-concurrency` (default %(default)s)",
    )
    parser.add_argument(
        "--emulator-flavour",
        choices=FLAVOURS,
        default="tuned",
        help="the embedded emulator: tuned (default) or plain moto, to compare (local/emulator.py)",
    )
    parser.add_argument(
        "--partition-limits",
        metavar="FACTOR",
        help="the emulator enforces DynamoDB's partition limits times FACTOR (1/100)",
    )
    parser.add_argument(
        "--partition-burst-seconds",
        type=float,
        default=0.0,
        help="unused capacity an item or key keeps for bursts, in seconds of its scaled rate (default 0: "
        "none; docs/scaling.md says why a scaled run needs a little)",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=0.0,
        help="seconds of the same load before the measured run (an account's shards grow meanwhile); "
        "the emulator's refusals are reported for the measured run only",
    )
    parser.add_argument(
        "--stream-batching-window",
        type=int,
        default=None,
        metavar="SECONDS",
        help="deploy with context streamBatchingWindowSeconds=SECONDS (a scaled run's trickle of records "
        "batched as the full rate would batch them; docs/scaling.md)",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="start sandboxes on demand during the load (default: all started first, as provisioned "
        "concurrency would; here a cold start takes the CPU that the emulator needs)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

    report = LoadReport(
        rate=args.rate,
        duration=args.duration,
        accounts=args.accounts,
        types=args.types,
        cold_starts=args.cold,
        emulator_flavour=args.emulator_flavour,
        partition_limits=args.partition_limits,
        stream_batching_window_seconds=args.stream_batching_window,
        account_concurrency=args.account_concurrency,
    )
    with EmulatorProcess(
        flavour=args.emulator_flavour,
        partition_limits=args.partition_limits,
        partition_burst_seconds=args.partition_burst_seconds,
    ) as emulator:
        runtime = LocalRuntime(
            runtime_settings(
                emulator.url,
                port=0,
                account_concurrency=args.account_concurrency,
                environment=scaled_environment(args.partition_limits),
                context=window_context(args.stream_batching_window),
            )
        )
        runtime.deploy_and_start()
        try:
            if not args.cold:
                print("starting every sandbox ...")
                runtime.provision_every_sandbox()
            client = admin_client(runtime, retry=SINGLE_ATTEMPT)
            table = runtime.outputs["TableName"]
            print("measuring the emulator's ceiling ...")
            report.emulator_calls_per_second = round(measure_emulator(runtime.client("dynamodb"), table), 1)
            report.ceiling_iterations_per_second = round(report.emulator_calls_per_second / CALLS_PER_ITERATION, 2)
            if args.ceiling_share is not None:
                report.rate = round(args.ceiling_share * report.ceiling_iterations_per_second, 1)
            limits = new_limits(client, args.accounts, args.types)
            live: Counter[Limit] = Counter()
            before: dict[str, int] = {}
            if args.warmup:
                print(f"warm-up: {report.rate}/s for {args.warmup} s")
                live += settle_all(client, run_load(client, limits, report.rate, args.warmup)[2])
                before = read_throttles(emulator.url) if args.partition_limits else {}
            print(f"load: {report.rate}/s for {args.duration} s over {args.accounts} account(s)")
            requests_before, cpu_before = read_request_counts(emulator.url), emulator.cpu_seconds()
            cpu_by_request_before = read_request_cpu(emulator.url)
            samples, elapsed, unsettled = run_load(client, limits, report.rate, args.duration)
            requests = read_request_counts(emulator.url) - requests_before
            emulator_cpu = emulator.cpu_seconds() - cpu_before
            cpu_by_request = read_request_cpu(emulator.url) - cpu_by_request_before
            report.iterations_started = int(report.rate * args.duration)
            if args.partition_limits:
                # The load's refusals only: the polls below read every item of an account, and
                # under scaled limits 10 reads a second of one item are more than it is given.
                after = read_throttles(emulator.url)
                refusals = {place: count - before.get(place, 0) for place, count in after.items()}
                refusals = {place: count for place, count in refusals.items() if count}
                report.partition_throttles = dict(sorted(refusals.items(), key=lambda pair: -pair[1])[:5])
                report.throttles_by_family = by_family(refusals)
            report.settled_after_the_load = len(unsettled)
            live += settle_all(client, unsettled)
            converged = wait_until_converged(client, live, limits, every=2.0 if args.partition_limits else 0.1)
            report.seconds_to_converge = None if converged is None else round(converged, 2)
            if report.partition_throttles:
                report.refused_item_bytes = item_sizes(runtime.client("dynamodb"), report.partition_throttles)
        finally:
            runtime.stop()
    summarize(report, samples, elapsed)
    report.share_of_ceiling = round(report.achieved_rate / report.ceiling_iterations_per_second, 3)
    completed = max(1, report.iterations_completed)
    report.emulator_requests_per_iteration = {
        name: round(count / completed, 2) for name, count in requests.most_common() if count / completed >= 0.01
    }
    report.emulator_cpu_seconds_per_iteration = round(emulator_cpu / completed, 4)
    report.emulator_cpu_ms_per_iteration_by_request = {
        name: round(seconds * 1000 / completed, 2)
        for name, seconds in cpu_by_request.most_common()
        if seconds * 1000 / completed >= 0.01
    }

    name = args.name or f"load-{report.rate:g}-per-s-{args.accounts}-accounts" + (
        f"-{args.types}-types" if args.types > 1 else ""
    )
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{name}.json"), "w", encoding="utf-8") as output:
        json.dump({**asdict(report), "samples": [asdict(s) for s in samples]}, output)
    plot(samples, report, os.path.join(RESULTS, f"{name}.png"))
    print(render(report))
    print(f"written: benchmarks/results/{name}.json and .png")
    return 0


def item_sizes(dynamodb: Any, places: Mapping[str, int]) -> dict[str, int]:
    """The size (DynamoDB's measure, local/capacity/billing.py) of each refused item among `places`
    (index keys left out), read once each."""
    sizes = {}
    for place in places:
        item = item_of_place(place)
        if item is None or item[2] is None:
            continue
        table, partition, sort = item
        key = {table_layout.PARTITION_KEY: {"S": partition}, table_layout.SORT_KEY: {"S": sort}}
        found = dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)
        sizes[place] = item_size(found.get("Item"))
    return sizes


def render(report: LoadReport) -> str:
    lines = [
        f"offered {report.rate}/s for {report.duration} s over {report.accounts} account(s)"
        f"{f' of {report.types} types each' if report.types > 1 else ''}"
        f"{', sandboxes started on demand' if report.cold_starts else ''}, {report.emulator_flavour} emulator"
        f"{f', partition limits x{report.partition_limits}' if report.partition_limits else ''}"
        f"{f', stream batching window {w} s' if (w := report.stream_batching_window_seconds) else ''}; "
        f"achieved {report.achieved_rate}/s ({report.iterations_completed}/{report.iterations_started} iterations)",
        f"emulator ceiling: {report.emulator_calls_per_second} conditional writes/s / {CALLS_PER_ITERATION} calls "
        f"= {report.ceiling_iterations_per_second} iterations/s; achieved = {report.share_of_ceiling:.0%} of it",
    ]
    for operation, figures in report.latency_ms.items():
        lines.append(f"  {operation:<15} " + "  ".join(f"{name} {value} ms" for name, value in figures.items()))
    lines.append("  answers  " + ", ".join(f"{name}: {count}" for name, count in report.statuses.items()))
    lines.append(f"  failures {report.failures}")
    if report.throttles_by_family:
        families = ", ".join(f"{family} {count}" for family, count in report.throttles_by_family.items())
        lines.append(f"  the emulator's refusals by kind of item: {families}")
    for place, refusals in report.partition_throttles.items():
        size = report.refused_item_bytes.get(place)
        lines.append(
            f"  the emulator refused {refusals} request(s) for {place}"
            + (f" ({size} bytes after)" if size is not None else "")
        )
    settled = f" ({report.settled_after_the_load} iterations without a definite answer settled first)"
    lines.append(
        f"  counters equal the truth {report.seconds_to_converge} s after the last answer"
        + (settled if report.settled_after_the_load else "")
    )
    if report.emulator_requests_per_iteration:
        total = sum(report.emulator_requests_per_iteration.values())
        lines.append(
            f"  the emulator per completed iteration: {total:.1f} requests and "
            f"{report.emulator_cpu_seconds_per_iteration * 1000:.1f} ms of its CPU; "
            + ", ".join(f"{name} {count}" for name, count in report.emulator_requests_per_iteration.items())
        )
    if report.emulator_cpu_ms_per_iteration_by_request:
        answering = report.emulator_cpu_ms_per_iteration_by_request
        lines.append(
            f"  of that CPU, {sum(answering.values()):.1f} ms answering requests (the rest: HTTP, threads): "
            + ", ".join(f"{name} {ms} ms" for name, ms in answering.items())
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
