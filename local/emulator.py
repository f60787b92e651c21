"""The embedded AWS emulator: moto's server on loopback, one request at a time.

Real DynamoDB applies each request atomically. moto's threaded server does not: two requests can
interleave inside its Python code (a conditional update checked by both before either writes, a
failed transaction restoring a table copy over a concurrent write). Serializing requests gives
the emulator DynamoDB's per-request atomicity, so a concurrency test fails only for our bugs.

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

LOOPBACK = "127.0.0.1"
READY_PREFIX = "READY "


class SerializedApplication:
    """WSGI wrapper that lets one request at a time into the wrapped application."""

    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self._application = application
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with self._lock:
            # Materialize the body inside the lock: moto computes responses lazily in places.
            return list(self._application(environ, start_response))


def serve(port: int, on_ready: Callable[[str], None]) -> None:
    # Imported here so that importing this module (to launch the process) stays cheap.
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

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
