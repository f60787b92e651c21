"""The callers the local API Gateway knows: access keys, each standing for a session of a role the
stack deploys (docs/security.md). AWS would issue these keys from `sts:AssumeRole`; here they are
minted locally, with the same meaning: an admin session, or a tenant session tagged with its
account id.

`make run` keeps them in `.local/identities.json` (created on first run, never committed) and prints
how to use them; tests and benchmarks mint their own in memory.
"""

from __future__ import annotations

import datetime
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from botocore.credentials import Credentials

from infra import constants
from local.sigv4 import utc_now

ADMIN, TENANT = "admin", "tenant"
IDENTITIES_FILE = Path(__file__).resolve().parent.parent / ".local" / "identities.json"
# The stack output naming each kind of session's role.
ROLE_OUTPUTS = {ADMIN: constants.OUTPUT_ADMIN_ROLE_ARN, TENANT: constants.OUTPUT_TENANT_ROLE_ARN}
# How long a minted session lasts: sts:AssumeRole's longest (DurationSeconds 43,200, for a role
# whose maximum session duration is 12 hours), so one `make run` session outlives its working day.
SESSION_DURATION = datetime.timedelta(hours=12)
# A saved session this close to its expiry is minted again when loaded, so a run starts with hours.
RENEWED_WITHIN = datetime.timedelta(hours=1)


@dataclass(frozen=True)
class Identity:
    """A role session's temporary credentials, as sts:AssumeRole returns them: an access key id,
    its secret, the session token that must come with them, and when they expire."""

    access_key_id: str
    secret_access_key: str
    session_token: str
    expiration: datetime.datetime
    role: str  # ADMIN or TENANT
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def session_name(self) -> str:
        return f"local-{self.tags.get(constants.TENANT_TAG_KEY, self.role)}"

    def credentials(self) -> Credentials:
        return Credentials(self.access_key_id, self.secret_access_key, self.session_token)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "expiration": self.expiration.isoformat()}

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> Identity:
        return cls(**{**entry, "expiration": datetime.datetime.fromisoformat(entry["expiration"])})


def _mint(role: str, tags: dict[str, str], now: datetime.datetime) -> Identity:
    return Identity(
        f"ASIALOCAL{secrets.token_hex(6).upper()}",
        secrets.token_urlsafe(30),
        secrets.token_urlsafe(64),
        now + SESSION_DURATION,
        role,
        dict(tags),
    )


class Identities:
    def __init__(self, known: list[Identity] | None = None, clock: Callable[[], datetime.datetime] = utc_now) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._by_key = {identity.access_key_id: identity for identity in known or []}
        if not any(identity.role == ADMIN for identity in self._by_key.values()):
            admin = _mint(ADMIN, {}, clock())
            self._by_key[admin.access_key_id] = admin

    @property
    def admin(self) -> Identity:
        return next(identity for identity in self._by_key.values() if identity.role == ADMIN)

    def tenant(self, account_id: str) -> Identity:
        """A tenant session for `account_id` (minted the first time it is asked for)."""
        with self._lock:
            for identity in self._by_key.values():
                if identity.role == TENANT and identity.tags.get(constants.TENANT_TAG_KEY) == account_id:
                    return identity
            minted = _mint(TENANT, {constants.TENANT_TAG_KEY: account_id}, self._clock())
            self._by_key[minted.access_key_id] = minted
            return minted

    def find(self, access_key_id: str) -> Identity | None:
        return self._by_key.get(access_key_id)

    def secret_of(self, access_key_id: str) -> str | None:
        identity = self._by_key.get(access_key_id)
        return None if identity is None else identity.secret_access_key

    def as_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [identity.to_json() for identity in self._by_key.values()]

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_json(), indent=2) + "\n", encoding="utf-8")
        path.chmod(0o600)

    @classmethod
    def load(cls, path: Path, clock: Callable[[], datetime.datetime] = utc_now) -> Identities:
        """The sessions saved at `path` (new ones, an admin and a tenant `acme`, the first time),
        each renewed if it must be (`_current`); saved again when anything changed."""
        now = clock()
        saved = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
        identities = cls([_current(entry, now) for entry in saved], clock)
        identities.tenant("acme")
        if identities.as_json() != saved:
            identities.save(path)
        return identities


def _current(saved: dict[str, Any], now: datetime.datetime) -> Identity:
    """A saved session, or a new one for its role and tags, as its caller would assume the role
    again, when it expires within RENEWED_WITHIN (or was saved before sessions had tokens)."""
    if "session_token" in saved:
        identity = Identity.from_json(saved)
        if identity.expiration - now > RENEWED_WITHIN:
            return identity
    return _mint(saved["role"], saved.get("tags", {}), now)


def main() -> None:
    """`python -m local.identities`: shell assignments of the `make run` callers' keys and session
    tokens, for `eval "$(python -m local.identities)"` then
    `curl --aws-sigv4 "$SIGV4" --user "$ADMIN" -H "x-amz-security-token: $ADMIN_TOKEN" ...`."""
    identities = Identities.load(IDENTITIES_FILE)
    admin, acme = identities.admin, identities.tenant("acme")
    print(f"ADMIN={admin.access_key_id}:{admin.secret_access_key}")
    print(f"ADMIN_TOKEN={admin.session_token}")
    print(f"ACME={acme.access_key_id}:{acme.secret_access_key}")
    print(f"ACME_TOKEN={acme.session_token}")
    print("SIGV4=aws:amz:us-east-1:execute-api")


if __name__ == "__main__":
    main()
