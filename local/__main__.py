"""`python -m local` (what `make run` starts): the whole system on one machine, no Docker, no AWS.

An embedded emulator (or the one at --endpoint-url / AWS_ENDPOINT_URL), the synthesized CDK
template deployed into it, and the local Lambda service running the deployed functions, with the
API on http://127.0.0.1:3000 until Ctrl-C. This is the product's launcher, not a stand-in: it wires
this product's app, callers and banner (local/product.py, local/identities.py) to the stand-ins.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from infra.outputs import DEFAULT_STACK_NAME, OUTPUT_DLQ1_URL, OUTPUT_DLQ2_URL, OUTPUT_STREAM_ARN, OUTPUT_TABLE_NAME
from local.deploy import context_entry
from local.endpoints import IDENTITIES_FILE_NAME, remove_endpoints, write_endpoints, writer_dir
from local.identities import DEFAULT_TENANT, Identities

HOST = "127.0.0.1"  # the API's address: loopback only
PYTHON = ".venv/bin/python"  # as the banner's commands are typed, from the repository's root


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m local", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=3000, help="API port on 127.0.0.1 (default 3000)")
    parser.add_argument(
        "--endpoint-url",
        default=os.environ.get("AWS_ENDPOINT_URL"),
        help="use this AWS endpoint (LocalStack, an emulator already running) instead of starting one",
    )
    parser.add_argument(
        "--emulator-flavour",
        choices=("tuned", "plain"),
        default="tuned",
        help="the embedded emulator: moto tuned for load (default) or moto's own server, to compare",
    )
    parser.add_argument(
        "--partition-limits",
        metavar="FACTOR",
        help="enforce DynamoDB's partition limits in the embedded emulator, times FACTOR (1/100: 10 WCU/s and "
        "30 RCU/s per item and key); see docs/local-runtime.md",
    )
    parser.add_argument(
        "--partition-burst-seconds",
        type=float,
        default=300.0,
        help="unused capacity a partition keeps for bursts, as DynamoDB does (default 300; 0 shows throttles at once)",
    )
    parser.add_argument("--stack-name", default=DEFAULT_STACK_NAME)
    parser.add_argument("--faults", help="JSON file of fault rules to inject (see local/faults.py)")
    parser.add_argument(
        "--sqs-retry-visibility",
        type=int,
        default=None,
        help="seconds a failed DLQ message stays invisible (default: the queue's own visibility timeout)",
    )
    parser.add_argument(
        "--refusal-grace",
        type=int,
        default=None,
        help="seconds after its minute a minute's refused creates are announced as a Limit Refused event "
        "(default: the functions' own, 90)",
    )
    parser.add_argument(
        "--account-concurrency",
        type=int,
        default=10,
        help="sandboxes of a function without reserved concurrency (AWS's account default is 1,000; "
        "each one here is a process); an API call beyond them is answered at once, as API Gateway "
        "answers a throttled invocation (503 with the stack's gateway responses; default 10)",
    )
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        type=context_entry,
        default=[],
        metavar="KEY=VALUE",
        help="CDK context for the synthesized stack, as `cdk deploy -c` takes it (e.g. streamBatchingWindowSeconds=2)",
    )
    args = parser.parse_args(argv)
    args.context = dict(args.context)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from local.apigateway import PortInUse, check_port_free

    try:
        check_port_free(HOST, args.port)
    except PortInUse as error:
        print(f"python -m local: {error.strerror}", file=sys.stderr)
        return 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stdout)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    started = time.perf_counter()

    from local.emulator import EmulatorProcess
    from local.product import APP, refusal_environment, runtime_settings, scaled_environment, serving_endpoints
    from local.runtime import LocalRuntime

    emulator = None
    endpoint = args.endpoint_url
    if not endpoint:
        emulator = EmulatorProcess(
            flavour=args.emulator_flavour,
            partition_limits=args.partition_limits,
            partition_burst_seconds=args.partition_burst_seconds,
        )
        endpoint = emulator.start()
    faults: list[dict[str, Any]] = json.loads(open(args.faults).read()) if args.faults else []  # noqa: SIM115
    local_dir = writer_dir()
    identities = Identities.load(local_dir / IDENTITIES_FILE_NAME)
    runtime = LocalRuntime(
        runtime_settings(
            endpoint,
            identities=identities,
            app=dataclasses.replace(APP, stack_name=args.stack_name),
            host=HOST,
            port=args.port,
            faults=faults,
            sqs_retry_visibility_seconds=args.sqs_retry_visibility,
            account_concurrency=args.account_concurrency,
            environment={**scaled_environment(args.partition_limits), **refusal_environment(args.refusal_grace)},
            context=args.context,
        )
    )
    endpoints = None
    try:
        runtime.deploy_and_start()
        endpoints = serving_endpoints(runtime, endpoint)
        written = write_endpoints(local_dir, endpoints)
        flavour = emulator.flavour if emulator else ""
        print_summary(
            runtime, identities, endpoint, flavour, written, args.refusal_grace, time.perf_counter() - started
        )
        wait_for_interrupt()
    except PortInUse as error:  # taken while the stack deployed
        print(f"python -m local: {error.strerror}", file=sys.stderr)
        return 1
    finally:
        print("shutting down...", flush=True)
        if endpoints is not None:  # readers must not take a stopped system for a running one
            remove_endpoints(local_dir, endpoints)
        runtime.stop()
        if emulator is not None:
            emulator.stop()
    return 0


def callers(identities: Identities, identities_file: Path) -> list[str]:
    """Who may call, and how to call as each (curl signs SigV4 itself with --aws-sigv4; a session's
    keys go with its session token, which SIGN_ADMIN and SIGN_ACME carry)."""
    admin, tenant = identities.admin, identities.tenant(DEFAULT_TENANT)
    expiry = admin.expiration.strftime("%Y-%m-%d %H:%M UTC")
    return [
        f"  admin         --user {admin.access_key_id}:{admin.secret_access_key}   (may set limits)",
        f"  tenant acme   --user {tenant.access_key_id}:{tenant.secret_access_key}   (acme's paths only)",
        f"                with their session tokens, kept in {identities_file} (valid until {expiry})",
        f'  curl          eval "$({PYTHON} -m local.identities)"    # API, SIGN_ADMIN, SIGN_ACME: every curl flag',
        "                curl $SIGN_ADMIN -X PUT $API/accounts/acme -d '{\"limit\": 5}'",
        '                curl $SIGN_ACME -X POST $API/accounts/acme/resources -d \'{"name": "vm-1"}\'',
    ]


def print_summary(
    runtime: Any,
    identities: Identities,
    endpoint: str,
    emulator_flavour: str,
    endpoints_file: Path,
    refusal_grace: int | None,
    seconds: float,
) -> None:
    outputs = runtime.outputs
    grace = (
        f"{refusal_grace} s after its minute"
        if refusal_grace is not None
        else "90 s after its minute; ARGS='--refusal-grace 5' for 5 s"
    )
    print(
        "\n".join(
            [
                "",
                f"  API           {runtime.api_url}  (every request signed with SigV4: docs/security.md)",
                *callers(identities, endpoints_file.parent / IDENTITIES_FILE_NAME),
                f"  operate       {PYTHON} -m ops account acme    (finds this system in {endpoints_file})",
                f"  usage events  {PYTHON} -m ops events --follow    (and in this log; Limit Refused {grace})",
                f"  emulator      {endpoint}{f'  (embedded moto, {emulator_flavour})' if emulator_flavour else ''}",
                f"  table         {outputs.get(OUTPUT_TABLE_NAME)}",
                f"  stream        {outputs.get(OUTPUT_STREAM_ARN)}",
                f"  DLQ 1         {outputs.get(OUTPUT_DLQ1_URL)}",
                f"  DLQ 2         {outputs.get(OUTPUT_DLQ2_URL)}",
                f"  function logs {runtime.settings.log_dir}",
                f"  ready in {seconds:.1f} s; one line per invocation below; Ctrl-C stops everything "
                f"(and removes {endpoints_file.name})",
                "",
            ]
        ),
        flush=True,
    )


def wait_for_interrupt() -> None:
    stop = threading.Event()
    for name in ("SIGINT", "SIGTERM"):
        signal.signal(getattr(signal, name), lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    sys.exit(main())
