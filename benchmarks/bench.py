"""`make bench`: the AWS blog's seven counters, the paper's design as published and this project,
side by side on one embedded emulator, in one run (benchmarks/approaches/ has each of them).

For each approach, on a table of its own, one account holding `--standing` resources:

1. **capacity**: `--iterations` create+delete iterations, one at a time, with the capacity meter
   (benchmarks/capacity_meter.py) on the client: calls, WCU and RCU per create and per delete, what the stream
   consumer adds per iteration, the hottest item's WCU per iteration, and the one-account ceiling
   it implies on AWS (1,000 WCU/s or 3,000 RCU/s on one item, which DynamoDB never splits).
2. **latency**: as many iterations on another account, without the meter, timed at the caller
   (this machine's loopback and emulator: compare approaches, not clouds).
3. **lost answers**: `--workers` callers on one account each create `--resources` resources,
   then delete them. Every `--fault-every`-th write lands and then answers 500, as when
   DynamoDB's answer is lost; the SDK retries it (as tests/support/faults.py lands_then_500, at a
   fixed rate). A caller retries an operation that failed, with the same resource id, up to
   CALLER_ATTEMPTS times. The count error is the approach's count minus the resources that exist
   (`Approach.live`), once its consumer settled, after the creates and after the deletes.
4. **contention**: the same workload on another account, with no faults and DynamoDB's
   transaction conflicts modelled (Wire); the errors callers saw are counted by kind.

With `--types N` each of those accounts holds N limits (this project's resource types: the
default and `type-1` ..; for the others, which have one limit per counter, a counter each, named
`<account>/<type>`): the iterations go to each limit in turn and the callers race across them,
and the count error is summed over the limits.

Writes benchmarks/results/bench.json and three charts; prints the table. Asserts nothing:
tests/handler/test_bench_approaches.py checks the approaches and the harness.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError
from botocore.httpsession import URLLib3Session

from benchmarks.approaches import APPROACHES, Approach, LimitReached
from benchmarks.approaches.base import SDK_CONFIG
from benchmarks.capacity import PARTITION_RCU_PER_SECOND, PARTITION_WCU_PER_SECOND, hottest, per_iteration
from benchmarks.capacity_meter import CapacityMeter
from local.dynamodb_wire import error_body
from local.faults import ANSWERS, aws_response, cancelled_body

RESULTS = Path(__file__).parent / "results"
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")
CALLER_ATTEMPTS = 8
LIMIT = 10_000


class Wire:
    """Faults and transaction conflicts on one client, at botocore's `before-send` (below the SDK's
    retries, so it retries them as real answers).

    * Every `fault_every`-th write is sent, lands, and is answered 500 InternalServerError.
    * The conflict model, from the DynamoDB developer guide ("Transaction conflict handling"): a
      TransactWriteItems is cancelled with TransactionConflict when another caller's write on one
      of its items is in flight, and a PutItem, UpdateItem or DeleteItem fails with
      TransactionConflictException when another caller's transaction on its item is. In flight
      means from the client's send to its answer, which the emulator's one-request-at-a-time
      serving lengthens: the model shows which designs expose conflicts to callers and overstates
      how often; it does not measure AWS's rate.
    """

    def __init__(self, client: Any, fault_every: int, conflicts: bool = True) -> None:
        self.fault_every, self.model_conflicts = fault_every, conflicts
        self.writes = self.faults = self.conflicts = 0
        self._lock = threading.Lock()
        self._in_flight: dict[int, tuple[bool, set[str]]] = {}  # caller thread -> (transaction?, items)
        self._http = URLLib3Session()
        for operation in WRITES:
            client.meta.events.register(f"before-send.dynamodb.{operation}", self._before_send)
            client.meta.events.register(f"response-received.dynamodb.{operation}", self._answered)

    def _before_send(self, request: Any, event_name: str, **_: Any) -> Any:
        operation = event_name.rsplit(".", 1)[1]
        transaction = operation == "TransactWriteItems"
        body = json.loads(request.body or b"{}")
        actions = [next(iter(entry.values())) for entry in body["TransactItems"]] if transaction else [body]
        items = [_item_id(action) for action in actions]
        me = threading.get_ident()
        with self._lock:
            held = [
                item
                for item in items
                if self.model_conflicts
                and any(
                    item in theirs and (transaction or their_transaction)
                    for caller, (their_transaction, theirs) in self._in_flight.items()
                    if caller != me
                )
            ]
            if held:
                self.conflicts += 1
                return aws_response(request, 400, _conflict(items, held, transaction))
            self._in_flight[me] = (transaction, set(items))
            self.writes += 1
            fault = self.fault_every > 0 and self.writes % self.fault_every == 0
            self.faults += fault
        if not fault:
            return None
        self._http.send(request)  # it lands
        return aws_response(request, *ANSWERS["InternalServerError"])

    def _answered(self, **_: Any) -> None:
        with self._lock:
            self._in_flight.pop(threading.get_ident(), None)


def _item_id(action: dict[str, Any]) -> str:
    key = action.get("Key") or {name: action["Item"][name] for name in ("pk", "sk")}
    return f"{action['TableName']}|{json.dumps(key, sort_keys=True)}"


def _conflict(items: list[str], held: list[str], transaction: bool) -> dict[str, Any]:
    if not transaction:
        return error_body("TransactionConflictException", "Transaction is ongoing for the item")
    return cancelled_body(*("TransactionConflict" if item in held else "None" for item in items))


# -- the phases ---------------------------------------------------------------------------------


def settle(approach: Approach) -> None:
    """Run the consumer until the stream is drained and nothing waits for a retry."""
    quiet = 0
    for _ in range(500):
        applied = approach.consume()
        pending = bool(approach.pending)
        quiet = quiet + 1 if not applied and not pending else 0
        if quiet == 2 or not approach.has_stream:
            return
    raise RuntimeError(f"{approach.name}: the consumer did not settle")


def open_with_standing(approach: Approach, account: str, standing: int) -> None:
    approach.open_account(account, LIMIT)
    for number in range(standing):
        approach.create(account, f"standing-{number:03d}")
    settle(approach)


def limits_of(account: str, types: int) -> list[str]:
    """The limits of one account as the approaches name them: the account for its default type,
    `<account>/<type>` for the others (benchmarks/approaches/this_project.py reads them as types)."""
    return [account, *(f"{account}/type-{number}" for number in range(1, types))]


def measure_capacity(
    approach: Approach, meter: CapacityMeter, iterations: int, standing: int, types: int = 1
) -> dict[str, Any]:
    limits = limits_of("capacity", types)
    with meter.operation("setup"):
        for limit in limits:
            open_with_standing(approach, limit, standing)
    for number in range(iterations):
        account = limits[number % len(limits)]
        with meter.operation("create"):
            approach.create(account, f"measured-{number:03d}")
        with meter.operation("consumer record"):
            settle(approach)
        with meter.operation("delete"):
            approach.delete(account, f"measured-{number:03d}")
        with meter.operation("consumer record"):
            settle(approach)
    iteration = per_iteration(meter, iterations)
    (item, item_wcu), (read_item, item_rcu) = hottest(iteration.item_wcu), hottest(iteration.item_rcu)
    bounds = {"writes": PARTITION_WCU_PER_SECOND / item_wcu if item_wcu else float("inf")}
    bounds["reads"] = PARTITION_RCU_PER_SECOND / item_rcu if item_rcu else float("inf")
    bound = min(bounds, key=lambda name: bounds[name])
    consumer = meter.usage.get("consumer record")
    return {
        **{name: _operation(meter, name) for name in ("create", "delete")},
        "consumer_per_iteration": {
            "calls": sum(consumer.calls.values()) / iterations if consumer else 0.0,
            "wcu": consumer.total_wcu / iterations if consumer else 0.0,
            "rcu": consumer.total_rcu / iterations if consumer else 0.0,
        },
        "iteration": {"wcu": iteration.total_wcu, "rcu": iteration.total_rcu, "calls": sum(iteration.calls.values())},
        "hottest_item": {
            "item": item,
            "wcu_per_iteration": item_wcu,
            "read_item": read_item,
            "rcu_per_iteration": item_rcu,
        },
        "ceiling_per_second": bounds[bound],
        "ceiling_bound_by": f"{item if bound == 'writes' else read_item} ({bound})",
    }


def _operation(meter: CapacityMeter, name: str) -> dict[str, float]:
    usage = meter.usage[name]
    return {
        "calls": sum(usage.calls.values()) / usage.runs,
        "wcu": usage.total_wcu / usage.runs,
        "rcu": usage.total_rcu / usage.runs,
        "hottest_item_wcu": hottest(usage.item_wcu)[1] / usage.runs,
    }


def measure_latency(approach: Approach, iterations: int, standing: int, types: int = 1) -> dict[str, dict[str, float]]:
    limits = limits_of("latency", types)
    for limit in limits:
        open_with_standing(approach, limit, standing)
    timings: dict[str, list[float]] = {"create": [], "delete": []}
    for number in range(iterations):
        account = limits[number % len(limits)]
        for name, call in (("create", approach.create), ("delete", approach.delete)):
            started = time.perf_counter()
            call(account, f"timed-{number:03d}")
            timings[name].append((time.perf_counter() - started) * 1000)
            settle(approach)
    return {name: {"p50": _percentile(values, 50), "p95": _percentile(values, 95)} for name, values in timings.items()}


def _percentile(values: list[float], percent: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[percent - 1] if len(values) > 1 else values[0]


def measure_failures(
    approach: Approach, account: str, wire: Wire, workers: int, resources: int, standing: int, types: int = 1
) -> dict[str, Any]:
    limits = limits_of(account, types)
    for limit in limits:
        open_with_standing(approach, limit, standing)
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    stop = threading.Event()

    def call(operation: Callable[[], Any]) -> None:
        for attempt in range(CALLER_ATTEMPTS):
            try:
                operation()
                return
            except LimitReached:
                return
            except Exception as error:  # what the caller's API would answer with: a 4xx or 5xx
                with lock:
                    errors[_caller_error(error)] += 1
                time.sleep(random.uniform(0, min(0.2, 0.01 * 2**attempt)))  # noqa: S311 (jitter, not a secret)
        with lock:
            errors["gave up"] += 1

    def worker(number: int, kind: str) -> None:
        for index in range(resources):
            operation = approach.create if kind == "create" else approach.delete
            limit = limits[(number + index) % len(limits)]  # callers race across the limits
            call(functools.partial(operation, limit, f"w{number}-{index:03d}"))

    def consume_meanwhile() -> None:
        while not stop.is_set():
            if not approach.consume():
                stop.wait(0.05)  # as Lambda polls a quiet shard, not in a tight loop

    consumer = threading.Thread(target=consume_meanwhile, daemon=True) if approach.has_stream else None
    if consumer:
        consumer.start()
    found: dict[str, int] = {}
    for kind in ("create", "delete"):
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(functools.partial(worker, kind=kind), range(workers)))
        if consumer:
            stop.set()
            consumer.join()
        settle(approach)
        found[kind] = sum(approach.count(limit) - approach.live(limit) for limit in limits)
        if consumer and kind == "create":
            stop.clear()
            consumer = threading.Thread(target=consume_meanwhile, daemon=True)
            consumer.start()
    best_effort = getattr(approach, "best_effort", None)
    return {
        "operations": 2 * workers * resources,
        "writes": wire.writes,
        "faults_injected": wire.faults,
        "conflicts_modelled": wire.conflicts,
        "caller_errors": dict(errors),
        "count_error_after_creates": found["create"],
        "count_error_after_deletes": found["delete"],
        "best_effort_error_after_deletes": sum(best_effort(limit) - approach.live(limit) for limit in limits)
        if best_effort
        else None,
    }


def _caller_error(error: Exception) -> str:
    """ "transaction" when DynamoDB's own transaction error reaches the caller; this project's API
    answers its own 503 instead (functions/api/errors.py), counted as "other"."""
    if isinstance(error, ClientError) and "Transaction" in error.response["Error"]["Code"]:
        return "transaction"
    return "other"


def run_approach(kind: type[Approach], url: str, args: argparse.Namespace) -> dict[str, Any]:
    """The three phases, each through a client of its own on the approach's one table."""

    def client() -> Any:
        return boto3.client("dynamodb", endpoint_url=url, config=SDK_CONFIG)

    streams = boto3.client("dynamodbstreams", endpoint_url=url)
    table = f"bench-{kind.name}"
    metered = kind(client(), streams, table)
    metered.create_table()
    metered.connect()
    result: dict[str, Any] = {"name": kind.name, "title": kind.title, "source": kind.source}
    meter = CapacityMeter(metered.dynamodb, reader=client())
    types = getattr(args, "types", 1)
    result["capacity"] = measure_capacity(metered, meter, args.iterations, args.standing, types)
    timed = kind(client(), streams, table)
    timed.connect(metered.tap)
    result["latency_ms"] = measure_latency(timed, args.iterations, args.standing, types)
    for phase, fault_every, conflicts in (("lost answers", args.fault_every, False), ("contention", 0, True)):
        caller = kind(client(), streams, table)
        caller.connect(metered.tap)
        wire = Wire(caller.dynamodb, fault_every, conflicts)
        account = phase.replace(" ", "-")
        result[phase] = measure_failures(caller, account, wire, args.workers, args.resources, args.standing, types)
    return result


# -- the report ---------------------------------------------------------------------------------

COLUMNS = (
    ("approach", 30),
    ("create calls/WCU/RCU", 21),
    ("delete calls/WCU/RCU", 21),
    ("consumer WCU/it", 16),
    ("hottest item WCU/it", 20),
    ("ceiling/s", 10),
    ("lost answers: error", 20),
    ("contention: tx errors", 22),
    ("contention: error", 18),
    ("create p50/p95 ms", 18),
)


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "".join(f"{name:<{width}}" if index == 0 else f"{name:>{width}}" for index, (name, width) in enumerate(COLUMNS))
    ]
    for result in results:
        capacity, latency = result["capacity"], result["latency_ms"]
        lost, contention = result["lost answers"], result["contention"]
        cells = [
            result["title"],
            _triple(capacity["create"]),
            _triple(capacity["delete"]),
            f"{capacity['consumer_per_iteration']['wcu']:.1f}",
            f"{capacity['hottest_item']['wcu_per_iteration']:.1f}",
            f"{capacity['ceiling_per_second']:,.0f}",
            _errors(lost),
            str(contention["caller_errors"].get("transaction", 0)),
            _errors(contention),
            f"{latency['create']['p50']:.1f} / {latency['create']['p95']:.1f}",
        ]
        lines.append(
            "".join(
                f"{cell:<{width}}" if index == 0 else f"{cell:>{width}}"
                for index, (cell, (_, width)) in enumerate(zip(cells, COLUMNS, strict=True))
            )
        )
    return "\n".join(lines)


def _errors(phase: dict[str, Any]) -> str:
    return f"{phase['count_error_after_creates']:+d} / {phase['count_error_after_deletes']:+d}"


def _triple(operation: dict[str, float]) -> str:
    return f"{operation['calls']:.1f} / {operation['wcu']:.1f} / {operation['rcu']:.1f}"


def charts(results: list[dict[str, Any]], prefix: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = [result["title"] for result in results][::-1]
    rows = list(reversed(results))
    written = []

    figure, axis = plt.subplots(figsize=(8, 4.5))
    ceilings = [row["capacity"]["ceiling_per_second"] for row in rows]
    axis.barh(titles, ceilings, color="#4878a8")
    for position, ceiling in enumerate(ceilings):
        axis.text(ceiling * 1.05, position, f"{ceiling:,.0f}/s", va="center", fontsize=9)
    axis.set_xscale("log")
    axis.set_xlim(100, max(ceilings) * 4)
    axis.set_xlabel("create+delete iterations/s (log scale)")
    axis.set_title("One account's ceiling on AWS (hottest item at 1,000 WCU/s or 3,000 RCU/s)", fontsize=10)
    written.append(_save(figure, f"{prefix}-ceiling.png"))

    figure, axis = plt.subplots(figsize=(8, 4.5))
    positions = range(len(rows))
    after_creates = [row["lost answers"]["count_error_after_creates"] for row in rows]
    after_deletes = [row["lost answers"]["count_error_after_deletes"] for row in rows]
    axis.barh([p + 0.2 for p in positions], after_creates, height=0.4, label="after the creates", color="#d08040")
    axis.barh([p - 0.2 for p in positions], after_deletes, height=0.4, label="after the deletes", color="#4878a8")
    axis.set_yticks(list(positions), titles)
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlabel("count minus the resources that exist, once settled (+ overcount, - undercount)")
    axis.set_title("Count error under lost answers (a write lands, then 500)")
    axis.legend()
    written.append(_save(figure, f"{prefix}-count-error.png"))

    figure, axis = plt.subplots(figsize=(8, 4.5))
    left = [0.0] * len(rows)
    for label, part, colour in (
        ("create", "create", "#4878a8"),
        ("delete", "delete", "#6aa86a"),
        ("stream consumer", "consumer_per_iteration", "#d08040"),
    ):
        widths = [float(row["capacity"][part]["wcu"]) for row in rows]
        axis.barh(titles, widths, left=left, label=label, color=colour)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    axis.set_xlabel("WCU per create+delete iteration (table and indexes)")
    axis.set_title("What each approach writes")
    axis.legend()
    written.append(_save(figure, f"{prefix}-wcu.png"))
    return written


def _save(figure: Any, name: str) -> Path:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    path = RESULTS / name
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--iterations", type=int, default=20, help="create+delete iterations measured (capacity, latency)"
    )
    parser.add_argument("--standing", type=int, default=20, help="resources each account holds throughout")
    parser.add_argument("--workers", type=int, default=4, help="concurrent callers in the failure phase")
    parser.add_argument("--resources", type=int, default=15, help="resources each caller creates, then deletes")
    parser.add_argument("--fault-every", type=int, default=10, help="every Nth write lands, then answers 500 (0: none)")
    parser.add_argument(
        "--types", type=int, default=1, help="limits per account (this project's resource types), used in turn"
    )
    parser.add_argument("--only", default="", help="comma-separated approach names (default: all)")
    parser.add_argument("--output", default="bench", help="name of the JSON and charts under benchmarks/results/")
    args = parser.parse_args(argv)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from local.emulator import EmulatorProcess
    from local.runtime import LOCAL_CREDENTIALS

    os.environ.update(LOCAL_CREDENTIALS, AWS_DEFAULT_REGION="us-east-1")
    chosen = [kind for kind in APPROACHES if not args.only or kind.name in args.only.split(",")]
    results = []
    started = time.monotonic()
    with EmulatorProcess() as emulator:
        for number, kind in enumerate(chosen, 1):
            print(f"[{number}/{len(chosen)}] {kind.title} ...", end=" ", flush=True)
            began = time.monotonic()
            results.append(run_approach(kind, emulator.url, args))
            print(f"{time.monotonic() - began:.0f} s", flush=True)
    print()
    print(table(results))
    print(
        f"\ncapacity: {args.iterations} iterations with {args.standing} resources standing"
        + (f" per limit, over {args.types} limits per account used in turn" if args.types > 1 else "")
        + ", metered "
        f"(benchmarks/capacity_meter.py); ceiling: AWS's 1,000 WCU/s and 3,000 RCU/s on the hottest item; "
        f"count error after "
        f"{args.workers} callers x {args.resources} creates / then as many deletes, every {args.fault_every}th "
        f"write landing then answered 500; tx errors: transaction errors callers saw (conflicts modelled, see Wire)."
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.output}.json").write_text(
        json.dumps({"arguments": vars(args), "results": results}, indent=2) + "\n"
    )
    for path in [RESULTS / f"{args.output}.json", *charts(results, args.output)]:
        print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    print(f"{time.monotonic() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
