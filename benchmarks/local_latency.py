"""Measure the local system: start-up time, and how long a created resource takes to be counted.

    .venv/bin/python -m benchmarks.local_latency [--samples 30]

Starts the embedded emulator and the local Lambda service (as `make run` does, on a free port),
then creates resources one at a time through the HTTP API and polls GET /accounts/{id} until
`eventual` counts each one. Figures are wall-clock on this machine, with the same emulator that
serves every request: they describe the local runtime, not AWS.
"""

from __future__ import annotations

import argparse
import statistics
import time

from local.emulator import EmulatorProcess
from local.product import SINGLE_ATTEMPT, admin_client, new_account, runtime_settings
from local.runtime import LocalRuntime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()

    started = time.perf_counter()
    with EmulatorProcess() as emulator:
        runtime = LocalRuntime(runtime_settings(emulator.url, port=0))
        runtime.deploy_and_start()
        startup = time.perf_counter() - started
        try:
            # One request per create, so that its latency is one answer's (an error is raised).
            client = admin_client(runtime, retry=SINGLE_ATTEMPT)
            account_id = new_account(client, prefix="bench", limit=args.samples + 1)
            create_ms, counted_ms = [], []
            for index in range(args.samples):
                t0 = time.perf_counter()
                client.create_resource(account_id, f"r{index}")
                t1 = time.perf_counter()
                while client.get_account(account_id).eventual < index + 1:
                    time.sleep(0.01)
                t2 = time.perf_counter()
                create_ms.append((t1 - t0) * 1000)
                counted_ms.append((t2 - t0) * 1000)
        finally:
            runtime.stop()

    def summary(values: list[float]) -> str:
        ordered = sorted(values)
        p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
        return f"median {statistics.median(ordered):7.1f} ms   p95 {p95:7.1f} ms   max {ordered[-1]:7.1f} ms"

    print(f"start-up (emulator + synth + deploy + sandboxes): {startup:.1f} s")
    print(f"POST /resources answered          ({args.samples} samples): {summary(create_ms)}")
    print(f"created -> counted by `eventual`  ({args.samples} samples): {summary(counted_ms)}")


if __name__ == "__main__":
    main()
