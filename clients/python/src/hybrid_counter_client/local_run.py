"""The system `make run` serves in a checkout of the repository, as `LimitsClient.local(...)` finds it:
its API's URL and region in `.local/endpoints.json`, and the sessions that may call it (the admin's,
and a tenant's per account) in `.local/identities.json`, both written by `make run`.

This package does not import the repository's `local` package (it is installed on its own): it reads
the two files as that package writes them (local/sessions.py, `Sessions.save`: a list of
`{"access_key_id", "secret_access_key", "session_token", "expiration", "role", "tags"}`).

The `.local` folder is, in this order: the `directory` passed, the environment variable
HYBRID_COUNTER_LOCAL_DIR (either may name the repository's folder instead), or the first `.local`
holding endpoints.json in the current directory or one of its parents, so that the client works
from any folder inside the repository.

`local_endpoints` is the one reader of endpoints.json: the repository's own tools (`python -m ops`,
`python -m local.identities`, local/endpoints.py) and examples/projects/try_locally.py read it here
too, so that a change of where or how the file is found is made once.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.credentials import Credentials

from hybrid_counter_client.operations import checked_path_value

DIRECTORY_VARIABLE = "HYBRID_COUNTER_LOCAL_DIR"
ENDPOINTS_FILE = "endpoints.json"
IDENTITIES_FILE = "identities.json"
# The local API Gateway's region when endpoints.json does not name one (SigV4 scope).
DEFAULT_REGION = "us-east-1"
ADMIN_ROLE, TENANT_ROLE, TENANT_TAG = "admin", "tenant", "tenant"
START_FIRST = "start the system with `make run` first"


class LocalSystemError(RuntimeError):
    """The system `make run` serves could not be found, or has no session for the caller asked for."""


def local_directory(directory: str | os.PathLike[str] | None = None, *, cwd: Path | None = None) -> Path:
    """The `.local` folder `make run` wrote its endpoints to (module docstring for the order; `cwd`:
    where the search starts, default the current directory). LocalSystemError when there is none."""
    named = directory if directory is not None else os.environ.get(DIRECTORY_VARIABLE) or None
    if named is not None:
        path = Path(named).expanduser().resolve()
        if not (path / ENDPOINTS_FILE).is_file() and (path / ".local" / ENDPOINTS_FILE).is_file():
            path = path / ".local"  # the repository's folder, named instead of its .local
        if not (path / ENDPOINTS_FILE).is_file():
            source = "" if directory is not None else f" ({DIRECTORY_VARIABLE})"
            raise LocalSystemError(f"no {ENDPOINTS_FILE} in {path}{source}: {START_FIRST}")
        return path
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / ".local" / ENDPOINTS_FILE).is_file():
            return folder / ".local"
    raise LocalSystemError(
        f"no .local/{ENDPOINTS_FILE} in {start} or a folder above it ({DIRECTORY_VARIABLE} unset): {START_FIRST}"
    )


@dataclass(frozen=True)
class LocalEndpoints:
    """`.local/endpoints.json` as `make run` writes it, and the folder it was found in. `api_url`
    and `region` are what a client needs (the region defaults to us-east-1); the other keys are
    None in a file that lacks them (`make run` always writes them)."""

    folder: Path
    api_url: str
    region: str
    emulator_url: str | None = None
    stack_name: str | None = None
    log_directory: str | None = None

    @property
    def path(self) -> Path:
        return self.folder / ENDPOINTS_FILE

    @property
    def identities(self) -> Path:
        """identities.json beside it: the sessions `make run` signs its callers with."""
        return self.folder / IDENTITIES_FILE


def local_endpoints(directory: str | os.PathLike[str] | None = None, *, cwd: Path | None = None) -> LocalEndpoints:
    """What `make run` wrote in the `.local` folder `local_directory(directory, cwd=cwd)` finds.
    Keys other than these are ignored. LocalSystemError when there is no such file, or it is not
    what `make run` writes."""
    folder = local_directory(directory, cwd=cwd)
    path = folder / ENDPOINTS_FILE
    entries = _read_json(path)
    if not isinstance(entries, dict):
        raise LocalSystemError(f"{path} is not what `make run` writes (not an object): run `make run` again")
    api_url = _entry(entries, "apiUrl", path)
    if api_url is None:
        raise LocalSystemError(f"{path} has no apiUrl: run `make run` again")
    return LocalEndpoints(
        folder,
        api_url,
        _entry(entries, "region", path) or DEFAULT_REGION,
        _entry(entries, "emulatorUrl", path),
        _entry(entries, "stackName", path),
        _entry(entries, "logDirectory", path),
    )


def _entry(entries: Mapping[str, Any], key: str, path: Path) -> str | None:
    value = entries.get(key)
    if value is not None and not isinstance(value, str):
        raise LocalSystemError(f"{path} is not what `make run` writes ({key} is not a string): run `make run` again")
    return value


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LocalSystemError(f"no {path}: {START_FIRST}") from None
    except (OSError, ValueError) as error:
        raise LocalSystemError(f"{path} is not what `make run` writes ({error}): run `make run` again") from None


class LocalSession:
    """One of `make run`'s sessions, as the client's `session`: its keys read from identities.json,
    and read again whenever the file changes (a restarted `make run` renews a session that is near
    its expiry, with new keys), so a client made before a restart keeps working after it."""

    def __init__(self, path: Path, role: str, tags: Mapping[str, str], region: str) -> None:
        self._path = path
        self._role = role
        self._tags = dict(tags)
        self._region = region
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._credentials: Credentials | None = None
        self.get_credentials()  # refused now, not at the first call, when there is no such session

    @property
    def region_name(self) -> str:
        return self._region

    def get_credentials(self) -> Credentials:
        with self._lock:
            try:
                status = self._path.stat()
            except FileNotFoundError:
                raise LocalSystemError(f"no {self._path}: {START_FIRST}") from None
            # `make run` writes the file anew and renames it into place: a new inode, whatever the
            # clock's resolution and the file's size.
            stamp = (status.st_ino, status.st_mtime_ns, status.st_size)
            if self._credentials is None or stamp != self._stamp:
                self._credentials = self._read()
                self._stamp = stamp
            return self._credentials

    def _read(self) -> Credentials:
        entries = _read_json(self._path)
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("role") == self._role and entry.get("tags", {}) == self._tags:
                return Credentials(entry["access_key_id"], entry["secret_access_key"], entry["session_token"])
        if self._role == TENANT_ROLE:
            account = self._tags[TENANT_TAG]
            raise LocalSystemError(
                f"no tenant session for {account!r} in {self._path}: `python -m local.identities {account}` "
                "(in the repository) makes one, which a running `make run` accepts at once"
            )
        raise LocalSystemError(f"no {self._role} session in {self._path}: {START_FIRST}")


@dataclass(frozen=True)
class LocalSystem:
    """Where `make run`'s API is and who calls it: a client's `api_url`, `session` and `region`."""

    api_url: str
    session: LocalSession
    region: str


def local_system(account_id: str | None, admin: bool, directory: str | os.PathLike[str] | None = None) -> LocalSystem:
    """The API `make run` serves, signed as the admin (`admin=True`) or as `account_id`'s tenant."""
    if admin and account_id is not None:
        raise TypeError("pass a tenant's account id or admin=True, not both")
    if not admin and account_id is None:
        raise TypeError("whose session signs? pass a tenant's account id (local('acme')) or admin=True")
    endpoints = local_endpoints(directory)
    if admin:
        role, tags = ADMIN_ROLE, {}
    else:
        role, tags = TENANT_ROLE, {TENANT_TAG: checked_path_value("accountId", account_id)}
    return LocalSystem(
        endpoints.api_url, LocalSession(endpoints.identities, role, tags, endpoints.region), endpoints.region
    )
