"""Where a running `make run` serves: `.local/endpoints.json` (part of the product's launcher, not a
stand-in: docs/local-runtime.md).

`make run` (local/__main__.py) writes it once it serves, and removes it when it stops:

    {"apiUrl": "http://127.0.0.1:3000", "emulatorUrl": "http://127.0.0.1:<port>",
     "stackName": "HybridCounter", "region": "us-east-1", "logDirectory": "<absolute path>"}

so `python -m ops`, `python -m local.identities` and the Python client's local helper find the
system without a URL copied by hand. Readers use only these keys and ignore any other. A reader
finds the folder (`find_local_dir`) from an explicit argument, else HYBRID_COUNTER_LOCAL_DIR, else
the first `.local` holding endpoints.json in the current directory or one of its parents. A file
left by a `make run` that was killed names ports nothing answers on: the readers here check
(`check_answers`) and say so rather than use it.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

LOCAL_DIR_ENV = "HYBRID_COUNTER_LOCAL_DIR"
LOCAL_DIR_NAME = ".local"
ENDPOINTS_FILE = "endpoints.json"
IDENTITIES_FILE_NAME = "identities.json"
# Where `make run` keeps them unless HYBRID_COUNTER_LOCAL_DIR says otherwise: the repository's .local/.
REPO_LOCAL_DIR = Path(__file__).resolve().parent.parent / LOCAL_DIR_NAME
START_FIRST = "start the system with `make run` first"


class NotRunning(Exception):
    """No running `make run` to be found: the message says where it looked and what to do."""


@dataclass(frozen=True)
class Endpoints:
    api_url: str
    emulator_url: str
    stack_name: str
    region: str
    log_directory: str

    def to_json(self) -> dict[str, str]:
        return {
            "apiUrl": self.api_url,
            "emulatorUrl": self.emulator_url,
            "stackName": self.stack_name,
            "region": self.region,
            "logDirectory": self.log_directory,
        }

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> Endpoints:
        return cls(
            str(entry["apiUrl"]),
            str(entry["emulatorUrl"]),
            str(entry["stackName"]),
            str(entry["region"]),
            str(entry["logDirectory"]),
        )


def writer_dir() -> Path:
    """Where `make run` writes: HYBRID_COUNTER_LOCAL_DIR, else the repository's .local/."""
    named = os.environ.get(LOCAL_DIR_ENV)
    return Path(named).resolve() if named else REPO_LOCAL_DIR


def find_local_dir(explicit: str | Path | None = None, cwd: Path | None = None) -> Path:
    """The folder of a running `make run`: `explicit`, else HYBRID_COUNTER_LOCAL_DIR, else the first
    `.local` holding endpoints.json in `cwd` (default: the current directory) or a parent of it."""
    named = explicit or os.environ.get(LOCAL_DIR_ENV)
    if named:
        folder = Path(named).resolve()
        if not (folder / ENDPOINTS_FILE).is_file():
            source = "" if explicit else f" ({LOCAL_DIR_ENV})"
            raise NotRunning(f"no {ENDPOINTS_FILE} in {folder}{source}: {START_FIRST}")
        return folder
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / LOCAL_DIR_NAME / ENDPOINTS_FILE).is_file():
            return folder / LOCAL_DIR_NAME
    raise NotRunning(f"no {LOCAL_DIR_NAME}/{ENDPOINTS_FILE} in {start} or its parents: {START_FIRST}")


def read_endpoints(local_dir: Path) -> Endpoints:
    path = local_dir / ENDPOINTS_FILE
    try:
        return Endpoints.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise NotRunning(f"no {path}: {START_FIRST}") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise NotRunning(f"{path} is unreadable ({error}): {START_FIRST}, which writes it again") from None


def write_endpoints(local_dir: Path, endpoints: Endpoints) -> Path:
    """Written whole, then renamed into place: a reader sees the old file or the new one."""
    local_dir.mkdir(parents=True, exist_ok=True)
    path = local_dir / ENDPOINTS_FILE
    written = path.with_name(f".{path.name}.{os.getpid()}")
    written.write_text(json.dumps(endpoints.to_json(), indent=2) + "\n", encoding="utf-8")
    written.replace(path)
    return path


def remove_endpoints(local_dir: Path, endpoints: Endpoints) -> None:
    """Removed when the `make run` that wrote it stops, unless another one has written its own since."""
    path = local_dir / ENDPOINTS_FILE
    try:
        if read_endpoints(local_dir) == endpoints:
            path.unlink()
    except (NotRunning, FileNotFoundError):
        pass


def answers(url: str, timeout: float = 1.0) -> bool:
    """Something accepts connections at `url`'s host and port."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def check_answers(local_dir: Path, url: str) -> None:
    """Refuse a file left by a `make run` that no longer runs (killed before it could remove it)."""
    if not answers(url):
        raise NotRunning(
            f"nothing answers at {url}, which {local_dir / ENDPOINTS_FILE} names: the `make run` that wrote it "
            f"has stopped; {START_FIRST}"
        )
