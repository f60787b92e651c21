"""Role sessions, as sts:AssumeRole issues them, minted locally: the callers the local API Gateway
knows (local/iam_authorizer.py). A session is an access key, its secret and the session token that
must come with them, valid 12 hours, of a role (named by a label the runtime maps to the role's
ARN) with its session tags. Which roles and tags a product's callers have is the product's own
(local/identities.py for this one).

Sessions can be kept in a file that several processes share: a session one process saves there
is found by a store reading that file, without a restart.
"""

from __future__ import annotations

import datetime
import json
import os
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Self

from botocore.credentials import Credentials

from local.sigv4 import utc_now

# How long a minted session lasts: sts:AssumeRole's longest (DurationSeconds 43,200, for a role
# whose maximum session duration is 12 hours), so a session kept in a file outlives a working day.
SESSION_DURATION = datetime.timedelta(hours=12)
# A saved session this close to its expiry is minted again when loaded, so a run starts with hours.
RENEWED_WITHIN = datetime.timedelta(hours=1)

Clock = Callable[[], datetime.datetime]


@dataclass(frozen=True)
class Session:
    """A role session's temporary credentials, as sts:AssumeRole returns them: an access key id,
    its secret, the session token that must come with them, and when they expire."""

    access_key_id: str
    secret_access_key: str
    session_token: str
    expiration: datetime.datetime
    role: str
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def session_name(self) -> str:
        """The RoleSessionName: after its first tag's value, else its role."""
        return f"local-{next(iter(self.tags.values()), self.role)}"

    def credentials(self) -> Credentials:
        return Credentials(self.access_key_id, self.secret_access_key, self.session_token)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "expiration": self.expiration.isoformat()}

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> Session:
        return cls(**{**entry, "expiration": datetime.datetime.fromisoformat(entry["expiration"])})


def _mint(role: str, tags: Mapping[str, str], now: datetime.datetime) -> Session:
    return Session(
        f"ASIALOCAL{secrets.token_hex(6).upper()}",
        secrets.token_urlsafe(30),
        secrets.token_urlsafe(64),
        now + SESSION_DURATION,
        role,
        dict(tags),
    )


def _current(saved: dict[str, Any], now: datetime.datetime) -> Session:
    """A saved session, or a new one for its role and tags, as its caller would assume the role
    again, when it expires within RENEWED_WITHIN (or was saved without a session token)."""
    if "session_token" in saved:
        session = Session.from_json(saved)
        if session.expiration - now > RENEWED_WITHIN:
            return session
    return _mint(saved["role"], saved.get("tags", {}), now)


def _saved(path: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    return entries


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_mtime_ns, status.st_size


class Sessions:
    def __init__(self, known: Iterable[Session] = (), clock: Clock = utc_now, path: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._by_key = {session.access_key_id: session for session in known}
        # Where they are kept, if anywhere: a session saved there later (by another process) is
        # found too, without a restart.
        self._path = path
        self._read = _stamp(path) if path else None

    def session(self, role: str, tags: Mapping[str, str]) -> Session:
        """The session of `role` with exactly these tags, minted the first time it is asked for."""
        with self._lock:
            for session in self._by_key.values():
                if session.role == role and session.tags == tags:
                    return session
            minted = _mint(role, tags, self._clock())
            self._by_key[minted.access_key_id] = minted
            return minted

    def find(self, access_key_id: str) -> Session | None:
        session = self._by_key.get(access_key_id)
        if session is None and self._path is not None and self._learn_saved(self._path):
            session = self._by_key.get(access_key_id)
        return session

    def secret_of(self, access_key_id: str) -> str | None:
        session = self.find(access_key_id)
        return None if session is None else session.secret_access_key

    def as_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [session.to_json() for session in self._by_key.values()]

    def _learn_saved(self, path: Path) -> bool:
        """Take in the sessions saved at `path` since it was last read; True if it changed."""
        stamp = _stamp(path)
        with self._lock:
            if stamp is None or stamp == self._read:
                return False
            self._read = stamp
            try:
                saved = [Session.from_json(entry) for entry in _saved(path)]
            except (OSError, ValueError, TypeError, KeyError):  # edited by hand into something else: ignored
                return False
            for session in saved:
                self._by_key.setdefault(session.access_key_id, session)
            return True

    def save(self, path: Path) -> None:
        """Written whole, then renamed into place: a process reading `path` meanwhile sees the old
        or the new file, never half of one."""
        path.parent.mkdir(parents=True, exist_ok=True)
        written = path.with_name(f".{path.name}.{os.getpid()}")
        written.write_text(json.dumps(self.as_json(), indent=2) + "\n", encoding="utf-8")
        written.chmod(0o600)
        written.replace(path)

    @classmethod
    def load(cls, path: Path, clock: Clock = utc_now, wanted: Iterable[tuple[str, Mapping[str, str]]] = ()) -> Self:
        """The sessions saved at `path`, each renewed if it must be (`_current`), with a session for
        each (role, tags) `wanted` minted when there is none, saved again when anything changed;
        they learn sessions saved there later."""
        now = clock()
        saved = _saved(path)
        sessions = cls([_current(entry, now) for entry in saved], clock)
        for role, tags in wanted:
            sessions.session(role, tags)
        if sessions.as_json() != saved:
            sessions.save(path)
        return cls([Session.from_json(entry) for entry in _saved(path)], clock, path)
