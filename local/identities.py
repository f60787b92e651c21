"""The callers the local API Gateway knows: access keys, each standing for a session of a role the
stack deploys (docs/security.md). AWS would issue these keys from `sts:AssumeRole`; here they are
minted locally, with the same meaning: an admin session, or a tenant session tagged with its
account id.

`make run` keeps them in `.local/identities.json` (created on first run, never committed) and prints
how to use them; `python -m local.identities ACCOUNT` mints a tenant session for another account
there, which a running `make run` accepts at once. Tests and benchmarks mint their own in memory.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import secrets
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from botocore.credentials import Credentials

from functions.core.model import ID_PATTERN, MAX_ID_LENGTH
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

Clock = Callable[[], datetime.datetime]


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


def _tenant_tags(account_id: str) -> dict[str, str]:
    """A tenant session's tags. Only an account id may be one: the tenant policy puts the tag into
    its resource ARNs, and the deployed trust policy refuses a value that could widen them
    (docs/security.md)."""
    if not re.fullmatch(ID_PATTERN, account_id):
        raise ValueError(f"{account_id!r} is not an account id (letters, digits, - and _, at most {MAX_ID_LENGTH})")
    return {constants.TENANT_TAG_KEY: account_id}


def _mint(role: str, tags: dict[str, str], now: datetime.datetime) -> Identity:
    return Identity(
        f"ASIALOCAL{secrets.token_hex(6).upper()}",
        secrets.token_urlsafe(30),
        secrets.token_urlsafe(64),
        now + SESSION_DURATION,
        role,
        dict(tags),
    )


def _current(saved: dict[str, Any], now: datetime.datetime) -> Identity:
    """A saved session, or a new one for its role and tags, as its caller would assume the role
    again, when it expires within RENEWED_WITHIN (or was saved before sessions had tokens)."""
    if "session_token" in saved:
        identity = Identity.from_json(saved)
        if identity.expiration - now > RENEWED_WITHIN:
            return identity
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


class Identities:
    def __init__(self, known: list[Identity] | None = None, clock: Clock = utc_now, path: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._by_key = {identity.access_key_id: identity for identity in known or []}
        # Where they are kept, if anywhere: a session saved there later (by another process minting
        # a tenant) is found too, without a restart.
        self._path = path
        self._read = _stamp(path) if path else None
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
            minted = _mint(TENANT, _tenant_tags(account_id), self._clock())
            self._by_key[minted.access_key_id] = minted
            return minted

    def find(self, access_key_id: str) -> Identity | None:
        identity = self._by_key.get(access_key_id)
        if identity is None and self._path is not None and self._learn_saved(self._path):
            identity = self._by_key.get(access_key_id)
        return identity

    def secret_of(self, access_key_id: str) -> str | None:
        identity = self.find(access_key_id)
        return None if identity is None else identity.secret_access_key

    def as_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [identity.to_json() for identity in self._by_key.values()]

    def _learn_saved(self, path: Path) -> bool:
        """Take in the sessions saved at `path` since it was last read; True if it changed."""
        stamp = _stamp(path)
        with self._lock:
            if stamp is None or stamp == self._read:
                return False
            self._read = stamp
            try:
                saved = [Identity.from_json(entry) for entry in _saved(path)]
            except (OSError, ValueError, TypeError, KeyError):  # edited by hand into something else: ignored
                return False
            for identity in saved:
                self._by_key.setdefault(identity.access_key_id, identity)
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
    def load(cls, path: Path, clock: Clock = utc_now) -> Identities:
        """The sessions saved at `path` (new ones, an admin and a tenant `acme`, the first time),
        each renewed if it must be (`_current`), saved again when anything changed; they learn
        sessions saved there later."""
        now = clock()
        saved = _saved(path)
        identities = cls([_current(entry, now) for entry in saved], clock)
        identities.tenant("acme")
        if identities.as_json() != saved:
            identities.save(path)
        return cls([Identity.from_json(entry) for entry in _saved(path)], clock, path)


def mint_tenant(account_id: str, path: Path = IDENTITIES_FILE) -> Identity:
    """A tenant session for `account_id`, saved at `path` (the one there if there is one): a
    running `make run`, which keeps its callers there, accepts it at once."""
    identities = Identities.load(path)
    tenant = identities.tenant(account_id)
    if all(saved.get("access_key_id") != tenant.access_key_id for saved in _saved(path)):
        identities.save(path)
    return tenant


def shell_name(account_id: str) -> str:
    """The shell variable a tenant's key is printed as: `acme` -> ACME, `globex-2` -> GLOBEX_2."""
    name = account_id.upper().replace("-", "_")
    return f"TENANT_{name}" if name[0].isdigit() or name in ("ADMIN", "SIGV4") else name


def main(argv: list[str] | None = None, path: Path = IDENTITIES_FILE) -> None:
    """`python -m local.identities [ACCOUNT ...]`: shell assignments of the `make run` callers' keys
    and session tokens, for `eval "$(python -m local.identities)"` then
    `curl --aws-sigv4 "$SIGV4" --user "$ADMIN" -H "x-amz-security-token: $ADMIN_TOKEN" ...`."""
    parser = argparse.ArgumentParser(
        prog="python -m local.identities",
        description="Print the keys and session tokens of the local API's callers (the admin and tenant "
        f"sessions) as shell assignments. Each ACCOUNT gets a tenant session, minted and saved in {path} the "
        "first time: a running `make run` accepts it at once.",
    )
    parser.add_argument("accounts", nargs="*", metavar="ACCOUNT", help="a tenant's account id (default: acme)")
    args = parser.parse_args(argv)
    try:
        tenants = [mint_tenant(account_id, path) for account_id in args.accounts or ["acme"]]
    except ValueError as error:
        parser.error(str(error))
    admin = Identities.load(path).admin
    print(f"ADMIN={admin.access_key_id}:{admin.secret_access_key}")
    print(f"ADMIN_TOKEN={admin.session_token}")
    for tenant in tenants:
        name = shell_name(tenant.tags[constants.TENANT_TAG_KEY])
        print(f"{name}={tenant.access_key_id}:{tenant.secret_access_key}")
        print(f"{name}_TOKEN={tenant.session_token}")
    print("SIGV4=aws:amz:us-east-1:execute-api")
    if args.accounts:
        print(f"# kept in {path}; `make run` accepts them now, for each account's own paths", file=sys.stderr)


if __name__ == "__main__":
    main()
