"""This product's callers of the local API (part of its launcher, not a stand-in: docs/local-runtime.md):
an admin session, and a tenant session per account, tagged with its account id, of the two roles the
stack deploys (docs/security.md). AWS would issue them from `sts:AssumeRole`; local/sessions.py
mints them locally, with the same meaning.

`make run` keeps them in `.local/identities.json` (created on first run, never committed) and prints
how to use them; `python -m local.identities ACCOUNT` mints a tenant session for another account
there, which a running `make run` accepts at once. Tests and benchmarks mint their own in memory.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Self

from functions.core.model import ID_PATTERN, MAX_ID_LENGTH
from infra.outputs import OUTPUT_ADMIN_ROLE_ARN, OUTPUT_TENANT_ROLE_ARN, TENANT_TAG_KEY
from local.sessions import Clock, Session, Sessions
from local.sigv4 import utc_now

ADMIN, TENANT = "admin", "tenant"
IDENTITIES_FILE = Path(__file__).resolve().parent.parent / ".local" / "identities.json"
# The stack output naming each kind of session's role.
ROLE_OUTPUTS = {ADMIN: OUTPUT_ADMIN_ROLE_ARN, TENANT: OUTPUT_TENANT_ROLE_ARN}
DEFAULT_TENANT = "acme"


def tenant_tags(account_id: str) -> dict[str, str]:
    """A tenant session's tags. Only an account id may be one: the tenant policy puts the tag into
    its resource ARNs, and the deployed trust policy refuses a value that could widen them
    (docs/security.md)."""
    if not re.fullmatch(ID_PATTERN, account_id):
        raise ValueError(f"{account_id!r} is not an account id (letters, digits, - and _, at most {MAX_ID_LENGTH})")
    return {TENANT_TAG_KEY: account_id}


class Identities(Sessions):
    """Sessions with an admin always among them, and a tenant's minted the first time it is asked for."""

    def __init__(self, known: Iterable[Session] = (), clock: Clock = utc_now, path: Path | None = None) -> None:
        super().__init__(known, clock, path)
        self.session(ADMIN, {})

    @property
    def admin(self) -> Session:
        return self.session(ADMIN, {})

    def tenant(self, account_id: str) -> Session:
        """A tenant session for `account_id` (minted the first time it is asked for)."""
        return self.session(TENANT, tenant_tags(account_id))

    @classmethod
    def load(cls, path: Path, clock: Clock = utc_now, wanted: Iterable[tuple[str, Mapping[str, str]]] = ()) -> Self:
        """The sessions saved at `path` (an admin and a tenant `acme`, the first time), renewed if
        they must be, saved again when anything changed; they learn sessions saved there later."""
        return super().load(path, clock, [(TENANT, tenant_tags(DEFAULT_TENANT)), *wanted])


def mint_tenant(account_id: str, path: Path = IDENTITIES_FILE) -> Session:
    """A tenant session for `account_id`, saved at `path` (the one there if there is one): a
    running `make run`, which keeps its callers there, accepts it at once."""
    identities = Identities.load(path)
    before = identities.as_json()
    tenant = identities.tenant(account_id)
    if identities.as_json() != before:
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
        tenants = [mint_tenant(account_id, path) for account_id in args.accounts or [DEFAULT_TENANT]]
    except ValueError as error:
        parser.error(str(error))
    admin = Identities.load(path).admin
    print(f"ADMIN={admin.access_key_id}:{admin.secret_access_key}")
    print(f"ADMIN_TOKEN={admin.session_token}")
    for tenant in tenants:
        name = shell_name(tenant.tags[TENANT_TAG_KEY])
        print(f"{name}={tenant.access_key_id}:{tenant.secret_access_key}")
        print(f"{name}_TOKEN={tenant.session_token}")
    print("SIGV4=aws:amz:us-east-1:execute-api")
    if args.accounts:
        print(f"# kept in {path}; `make run` accepts them now, for each account's own paths", file=sys.stderr)


if __name__ == "__main__":
    main()
