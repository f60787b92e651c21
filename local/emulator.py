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
import copy
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

LOOPBACK = "127.0.0.1"
READY_PREFIX = "READY "


# JSON-protocol targets (X-Amz-Target header) of the services served one request at a time.
SERIALIZED_TARGET_PREFIXES = ("DynamoDB_20120810.", "DynamoDBStreams_20120810.")


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


def leave_invocations_to_the_local_lambda_service() -> None:
    """Stop moto from acting on event source mappings itself.

    moto hands new stream records and queue messages to a mapped function on its own (which needs
    Docker), and then drops the stream records and receives the messages, which raises their
    receive counts. The local Lambda service is the only poller, as Lambda is on AWS. The mappings
    stay listed by the Lambda API. Only the tables' and queues' private dispatch lists are emptied.
    """
    from moto.dynamodb.models.table import Table
    from moto.sqs.models import Queue

    no_dispatch = property(lambda _: {}, lambda _self, _value: None)
    Table.lambda_event_source_mappings = no_dispatch  # type: ignore[assignment]
    Queue.lambda_event_source_mappings = no_dispatch  # type: ignore[assignment]


def keep_tables_in_place_when_a_transaction_rolls_back() -> None:
    """Roll a cancelled transaction back inside the table object that was there before it ran.

    moto rolls back by putting a deep copy of each table in the place of the live one. That copy
    has a stream shard of its own, so every shard iterator already handed out keeps reading the
    dropped table and never sees another record. On AWS a cancelled transaction changes nothing,
    and a stream reader never notices it. Here, the state moto restored is moved back into the
    live table object, and stream records that the cancelled transaction added are removed.

    moto also deep-copies every table a transaction touches, before each transaction, which
    costs time in proportion to the table. A transaction can only change the partitions it names,
    so only those partitions are copied.
    """
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    original = DynamoDBBackend.transact_write_items
    touched: dict[str, set[Any]] = {}  # table name -> partition key values named by the transaction

    def snapshot(table: Any, memo: dict[int, Any]) -> Any:
        partitions = touched.get(table.name, set())
        clone = copy.copy(table)
        clone.items = copy.copy(table.items)  # same dict type; untouched partitions are shared
        for hash_value in partitions & set(table.items):
            clone.items[hash_value] = copy.deepcopy(table.items[hash_value], memo)
        if table.stream_shard is not None:
            clone.stream_shard = copy.copy(table.stream_shard)
            clone.stream_shard.items = list(table.stream_shard.items)
        return clone

    def transact_write_items(self: Any, transact_items: Any) -> Any:
        touched.clear()
        for entry in transact_items:
            (action,) = entry.values()
            table = self.tables.get(action.get("TableName"))
            if table is None:
                continue
            key = action.get("Key") or action.get("Item") or {}
            if table.hash_key_attr in key:
                touched.setdefault(table.name, set()).add(DynamoType(key[table.hash_key_attr]))
        live_tables = dict(self.tables)
        Table.__deepcopy__ = snapshot  # type: ignore[attr-defined]  # only while this (serialized) request runs
        try:
            return original(self, transact_items)
        except Exception:
            for name, live in live_tables.items():
                restored = self.tables.get(name)
                if restored is None or restored is live:
                    continue
                shard = live.stream_shard
                live.__dict__.update(restored.__dict__)
                if shard is not None and restored.stream_shard is not None:
                    del shard.items[len(restored.stream_shard.items) :]
                    shard.table = live
                live.stream_shard = shard
                self.tables[name] = live
            raise
        finally:
            del Table.__deepcopy__  # type: ignore[attr-defined]
            touched.clear()

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def serve(port: int, on_ready: Callable[[str], None]) -> None:
    # Imported here so that importing this module (to launch the process) stays cheap.
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    leave_invocations_to_the_local_lambda_service()
    keep_tables_in_place_when_a_transaction_rolls_back()

    application = SerializedApplication(DomainDispatcherApplication(create_backend_app))
    server = make_server(LOOPBACK, port, application, threaded=True)
    on_ready(f"http://{LOOPBACK}:{server.server_port}")
    server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_ACCOUNT_ID", "000000000000")

    def announce(url: str) -> None:
        print(f"{READY_PREFIX}{url}", flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        serve(args.port, announce)


class EmulatorProcess:
    """Starts the emulator as a child process and waits until it listens."""

    def __init__(self, port: int = 0) -> None:
        self._port = port
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
            [sys.executable, "-m", "local.emulator", "--port", str(self._port)],
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

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=10)
        self._process = None


if __name__ == "__main__":
    main()
