"""Where a running `make run` serves: `.local/endpoints.json` (part of the product's launcher, not a
stand-in: docs/local-runtime.md).

`make run` (local/__main__.py) writes it once it serves, and removes it when it stops:

    {"apiUrl": "http://127.0.0.1:3000", "emulatorUrl": "http://127.0.0.1:<port>",
     "stackName": "HybridCounter", "region": "us-east-1", "logDirectory": "<absolute path>"}

so `python -m ops`, `python -m local.identities` and the Python client's local helper find the
system without a URL copied by hand. This module is the writer; the one reader is the Python
client's (`hybrid_counter_client.local_directory` finds the folder: an explicit argument, else
HYBRID_COUNTER_LOCAL_DIR, else the first `.local` holding endpoints.json in the current directory or
one of its parents; `local_endpoints` reads it, ignoring keys it does not know). A file left by a
`make run` that was killed names ports nothing answers on: the readers here check (`check_answers`)
and say so rather than use it.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from hybrid_counter_client.local_run import (
    DIRECTORY_VARIABLE,
    ENDPOINTS_FILE,
    IDENTITIES_FILE,
    START_FIRST,
    LocalSystemError,
    local_endpoints,
)

# The client's names (hybrid_counter_client.local_run), under the ones the tools here use.
LOCAL_DIR_ENV = DIRECTORY_VARIABLE
IDENTITIES_FILE_NAME = IDENTITIES_FILE
LOCAL_DIR_NAME = ".local"
# Where `make run` keeps them unless HYBRID_COUNTER_LOCAL_DIR says otherwise: the repository's .local/.
REPO_LOCAL_DIR = Path(__file__).resolve().parent.parent / LOCAL_DIR_NAME


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


def writer_dir() -> Path:
    """Where `make run` writes: HYBRID_COUNTER_LOCAL_DIR, else the repository's .local/."""
    named = os.environ.get(LOCAL_DIR_ENV)
    return Path(named).resolve() if named else REPO_LOCAL_DIR


def read_endpoints(local_dir: Path) -> Endpoints:
    """The file in `local_dir`, read by the client's reader, with every key `make run` writes: the
    tools here need the emulator and the stack too. LocalSystemError when it is not there or lacks one."""
    found = local_endpoints(local_dir)
    if found.emulator_url is None or found.stack_name is None or found.log_directory is None:
        raise LocalSystemError(
            f"{found.path} lacks emulatorUrl, stackName or logDirectory: {START_FIRST}, which writes them"
        )
    return Endpoints(found.api_url, found.emulator_url, found.stack_name, found.region, found.log_directory)


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
    except (LocalSystemError, FileNotFoundError):
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
        raise LocalSystemError(
            f"nothing answers at {url}, which {local_dir / ENDPOINTS_FILE} names: the `make run` that wrote it "
            f"has stopped; {START_FIRST}"
        )
