"""The embedded AWS emulator: moto's server on loopback, one request at a time.

Real DynamoDB applies each request atomically. moto's threaded server does not: two requests can
interleave inside its Python code (a conditional update checked by both before either writes, a
failed transaction restoring a table copy over a concurrent write). Serializing DynamoDB and
DynamoDB Streams requests gives the emulator DynamoDB's per-request atomicity, so a concurrency
test fails only for our bugs. Other services stay concurrent: an SQS long poll waits for messages
that other requests must be able to send meanwhile.

Run as a process: `python -m local.emulator --port 0` prints `READY http://127.0.0.1:PORT`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from local import moto_patches
from local.capacity.limits import AWS_BURST_SECONDS, PartitionLimits, parse_factor
from local.moto_patches.client_request_tokens import ClientRequestTokens
from local.moto_patches.empty_expression_maps import EmptyExpressionMaps
from local.moto_patches.tables import MotoTables
from local.partition_reads import TARGET as PARTITION_READS_TARGET
from local.partition_reads import PartitionReads
from local.request_counts import RequestCounts

LOOPBACK = "127.0.0.1"
READY_PREFIX = "READY "


# JSON-protocol targets (X-Amz-Target header) of the services served one request at a time.
SERIALIZED_TARGET_PREFIXES = ("DynamoDB_20120810.", "DynamoDBStreams_20120810.", PARTITION_READS_TARGET)


class SerializedApplication:
    """WSGI wrapper that lets one DynamoDB request at a time into the wrapped application."""

    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self._application = application
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith(SERIALIZED_TARGET_PREFIXES):
            return self._application(environ, start_response)
        with self._lock:
            # Materialize the body inside the lock: moto computes responses lazily in places.
            return list(self._application(environ, start_response))


def freeze_what_survives_a_full_collection() -> None:
    """moto keeps every item and every stream record as Python objects, and the garbage collector's
    full collections walk them all while every request waits: under `make bench-load` at 26
    iterations/s they took 150 ms, then 190, 230, 270 and 420 ms, every 7 to 9 s, growing with the
    data (measured with gc.callbacks), and each one sent a burst of requests past the API
    function's concurrency. What survives a full collection is long-lived, so it is moved out of
    the collector's sight (`gc.freeze`): the next full collection walks only what came since.
    Reference counting still frees what is dropped; reference cycles that were alive at a full
    collection and die later are not reclaimed (about 14% more objects after a minute at 20
    iterations/s, beside the stream records moto keeps forever)."""
    import gc

    def after(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2:
            gc.freeze()

    gc.callbacks.append(after)


# The emulator's flavours: `tuned` (the default) answers on a keep-alive server with moto's hot
# paths shortened (moto_patches.apply_speed_ups); `plain` is moto's own development server and
# code, for comparison (benchmarks/emulators.py measures both). Both make moto answer as DynamoDB
# does (moto_patches.apply_corrections, the WSGI layers below, one request at a time).
FLAVOURS = ("tuned", "plain")
# Worker threads of the tuned server. SQS long polls (1 s, the local Lambda service's pollers)
# hold one each; DynamoDB requests run one at a time anyway.
SERVER_THREADS = 32


def serve(
    port: int, on_ready: Callable[[str], None], flavour: str = "tuned", limits: PartitionLimits | None = None
) -> None:
    # Imported here so that importing this module (to launch the process) stays cheap.
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    moto_patches.apply_corrections()
    if flavour != "plain":
        moto_patches.apply_speed_ups()
    freeze_what_survives_a_full_collection()
    dispatcher = DomainDispatcherApplication(create_backend_app)
    tables = MotoTables(os.environ["MOTO_ACCOUNT_ID"])
    application: Callable[..., Iterable[bytes]] = dispatcher
    if flavour != "plain":
        from local.moto_patches.dynamodb_without_flask import dynamodb_without_flask

        application = dynamodb_without_flask(dispatcher)
    if limits is not None:
        from local.partition_throttling import PartitionThrottling

        application = PartitionThrottling(application, limits, tables)
    application = PartitionReads(ClientRequestTokens(application), tables)
    application = EmptyExpressionMaps(application)  # refused before anything is billed, as DynamoDB does
    application = RequestCounts(application)  # what a run really asks of the emulator (load benchmark)
    if flavour == "plain":
        from werkzeug.serving import make_server

        server = make_server(LOOPBACK, port, SerializedApplication(application), threaded=True)
        on_ready(f"http://{LOOPBACK}:{server.server_port}")
        server.serve_forever()
        return

    from waitress.server import create_server

    # waitress keeps connections alive (werkzeug's development server closes every one, so each
    # SDK call paid a new TCP connection and a new thread) and serves from a fixed thread pool.
    tuned = create_server(
        SerializedApplication(application),
        host=LOOPBACK,
        port=port,
        threads=SERVER_THREADS,
        backlog=1024,
        connection_limit=4096,
        asyncore_use_poll=True,  # select() stops at 1,024 descriptors
    )
    on_ready(f"http://{LOOPBACK}:{tuned.effective_port}")
    tuned.run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--flavour", choices=FLAVOURS, default="tuned")
    parser.add_argument(
        "--partition-limits",
        type=parse_factor,
        default=None,
        help="enforce DynamoDB's partition limits times this factor (1/100: 10 WCU/s and 30 RCU/s per item and key)",
    )
    parser.add_argument("--partition-burst-seconds", type=float, default=AWS_BURST_SECONDS)
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_ACCOUNT_ID", "000000000000")
    try:
        moto_patches.check_version()
    except moto_patches.MotoVersionMismatch as error:
        print(error, flush=True)  # in place of the READY line: EmulatorProcess shows it
        sys.exit(1)

    def announce(url: str) -> None:
        print(f"{READY_PREFIX}{url}", flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        limits = (
            None
            if args.partition_limits is None
            else PartitionLimits(args.partition_limits, burst_seconds=args.partition_burst_seconds)
        )
        serve(args.port, announce, args.flavour, limits)


def process_cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far (user and system), from /proc (Linux)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class EmulatorProcess:
    """Starts the emulator as a child process and waits until it listens."""

    def __init__(
        self,
        port: int = 0,
        flavour: str = "tuned",
        partition_limits: str | None = None,
        partition_burst_seconds: float = AWS_BURST_SECONDS,
    ) -> None:
        self._port = port
        self.flavour = flavour
        self._limits = (
            []
            if partition_limits is None
            else ["--partition-limits", partition_limits, "--partition-burst-seconds", str(partition_burst_seconds)]
        )
        self._process: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> EmulatorProcess:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> str:
        env = {**os.environ, "MOTO_ACCOUNT_ID": os.environ.get("MOTO_ACCOUNT_ID", "000000000000")}
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "local.emulator",
                "--port",
                str(self._port),
                "--flavour",
                self.flavour,
                *self._limits,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()  # blocks until the server announces itself or dies
        if not line.startswith(READY_PREFIX):
            self.stop()
            raise RuntimeError(f"emulator did not start (said {line!r})")
        self.url = line[len(READY_PREFIX) :].strip()
        return self.url

    def cpu_seconds(self) -> float:
        """CPU time the emulator process has used so far (user and system)."""
        return 0.0 if self._process is None else process_cpu_seconds(self._process.pid)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=10)
        self._process = None


if __name__ == "__main__":
    main()
