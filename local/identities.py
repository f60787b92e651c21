"""The callers the local API Gateway knows: access keys, each standing for a session of a role the
stack deploys (docs/security.md). AWS would issue these keys from `sts:AssumeRole`; here they are
minted locally, with the same meaning: an admin session, or a tenant session tagged with its
account id.

`make run` keeps them in `.local/identities.json` (created on first run, never committed) and prints
how to use them; tests and benchmarks mint their own in memory.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from botocore.credentials import Credentials

from functions.core.model import ID_PATTERN, MAX_ID_LENGTH
from infra import constants

ADMIN, TENANT = "admin", "tenant"
IDENTITIES_FILE = Path(__file__).resolve().parent.parent / ".local" / "identities.json"
# The stack output naming each kind of session's role.
ROLE_OUTPUTS = {ADMIN: constants.OUTPUT_ADMIN_ROLE_ARN, TENANT: constants.OUTPUT_TENANT_ROLE_ARN}


@dataclass(frozen=True)
class Identity:
    access_key_id: str
    secret_access_key: str
    role: str  # ADMIN or TENANT
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def session_name(self) -> str:
        return f"local-{self.tags.get(constants.TENANT_TAG_KEY, self.role)}"

    def credentials(self) -> Credentials:
        return Credentials(self.access_key_id, self.secret_access_key)


def _tenant_tags(account_id: str) -> dict[str, str]:
    """A tenant session's tags. Only an account id may be one: the tenant policy puts the tag into
    its resource ARNs, and the deployed trust policy refuses a value that could widen them
    (docs/security.md)."""
    if not re.fullmatch(ID_PATTERN, account_id):
        raise ValueError(f"{account_id!r} is not an account id (letters, digits, - and _, at most {MAX_ID_LENGTH})")
    return {constants.TENANT_TAG_KEY: account_id}


def _mint(role: str, tags: dict[str, str] | None = None) -> Identity:
    return Identity(f"ASIALOCAL{secrets.token_hex(6).upper()}", secrets.token_urlsafe(30), role, dict(tags or {}))


class Identities:
    def __init__(self, known: list[Identity] | None = None) -> None:
        self._lock = threading.Lock()
        self._by_key = {identity.access_key_id: identity for identity in known or []}
        if not any(identity.role == ADMIN for identity in self._by_key.values()):
            admin = _mint(ADMIN)
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
            minted = _mint(TENANT, _tenant_tags(account_id))
            self._by_key[minted.access_key_id] = minted
            return minted

    def find(self, access_key_id: str) -> Identity | None:
        return self._by_key.get(access_key_id)

    def secret_of(self, access_key_id: str) -> str | None:
        identity = self._by_key.get(access_key_id)
        return None if identity is None else identity.secret_access_key

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            known = [asdict(identity) for identity in self._by_key.values()]
        path.write_text(json.dumps(known, indent=2) + "\n", encoding="utf-8")
        path.chmod(0o600)

    @classmethod
    def load(cls, path: Path) -> Identities:
        """The identities saved at `path`, or new ones (an admin and a tenant `acme`) saved there."""
        if path.exists():
            return cls([Identity(**entry) for entry in json.loads(path.read_text(encoding="utf-8"))])
        identities = cls()
        identities.tenant("acme")
        identities.save(path)
        return identities


def main() -> None:
    """`python -m local.identities`: shell assignments of the `make run` callers' keys, for
    `eval "$(python -m local.identities)"` then `curl --aws-sigv4 ... --user "$ADMIN"`."""
    identities = Identities.load(IDENTITIES_FILE)
    admin, acme = identities.admin, identities.tenant("acme")
    print(f"ADMIN={admin.access_key_id}:{admin.secret_access_key}")
    print(f"ACME={acme.access_key_id}:{acme.secret_access_key}")
    print("SIGV4=aws:amz:us-east-1:execute-api")


if __name__ == "__main__":
    main()
