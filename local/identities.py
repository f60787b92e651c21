"""This product's callers of the local API (part of its launcher, not a stand-in: docs/local-runtime.md):
an admin session, and a tenant session per account, tagged with its account id, of the two roles the
stack deploys (docs/security.md). AWS would issue them from `sts:AssumeRole`; local/sessions.py
mints them locally, with the same meaning.

`make run` keeps them in `.local/identities.json` (created on first run, never committed) and prints
how to use them; `python -m local.identities [ACCOUNT]` prints the running system's API URL and, for
the admin and each tenant, every curl flag that signs as it (SIGN_ADMIN, SIGN_ACME), minting a
tenant session for another account there the first time, which the running `make run` accepts at
once. Tests and benchmarks mint their own in memory.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Self

from hybrid_counter_client import LocalSystemError, local_endpoints

from functions.core.model import ID_PATTERN, MAX_ID_LENGTH
from infra.outputs import OUTPUT_ADMIN_ROLE_ARN, OUTPUT_TENANT_ROLE_ARN, TENANT_TAG_KEY
from local.endpoints import IDENTITIES_FILE_NAME, LOCAL_DIR_ENV, REPO_LOCAL_DIR, check_answers
from local.sessions import Clock, Session, Sessions
from local.sigv4 import utc_now

ADMIN, TENANT = "admin", "tenant"
IDENTITIES_FILE = REPO_LOCAL_DIR / IDENTITIES_FILE_NAME  # `make run`'s, unless HYBRID_COUNTER_LOCAL_DIR moves it
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
    """The shell variable a tenant's key is printed as: `acme` -> ACME, `globex-2` -> GLOBEX_2
    (TENANT_ in front where it would start with a digit or be one of the other variables)."""
    name = account_id.upper().replace("-", "_")
    taken = name in ("ADMIN", "SIGV4", "API") or name.startswith("SIGN_")
    return f"TENANT_{name}" if name[0].isdigit() or taken else name


def signing_variables(name: str, session: Session, region: str) -> list[str]:
    """`NAME` (key:secret), `NAME_TOKEN`, and `SIGN_NAME`: every flag curl needs to sign as this
    session, the session token's header included, for `curl $SIGN_NAME ...`."""
    sign = (
        f"--aws-sigv4 {sigv4_scope(region)} --user {session.access_key_id}:{session.secret_access_key} "
        f"-H x-amz-security-token:{session.session_token}"
    )
    return [
        f"{name}={shlex.quote(f'{session.access_key_id}:{session.secret_access_key}')}",
        f"{name}_TOKEN={shlex.quote(session.session_token)}",
        f"SIGN_{name}={shlex.quote(sign)}",
    ]


def sigv4_scope(region: str) -> str:
    """curl's --aws-sigv4 argument for API Gateway in `region`."""
    return f"aws:amz:{region}:execute-api"


def main(argv: list[str] | None = None) -> int:
    """`python -m local.identities [ACCOUNT ...]`: shell assignments of the running `make run`'s API
    URL and its callers' signing flags, for `eval "$(python -m local.identities)"` then
    `curl $SIGN_ADMIN $API/accounts/acme`."""
    parser = argparse.ArgumentParser(
        prog="python -m local.identities",
        description="Print, as shell assignments, the running `make run`'s API URL (API) and how to sign as "
        "each of its callers: SIGN_ADMIN, SIGN_<ACCOUNT> (every flag curl needs: --aws-sigv4, --user and the "
        "session token's header), and each one's key (ADMIN, ACME) and token (ADMIN_TOKEN, ACME_TOKEN). Each "
        "ACCOUNT gets a tenant session, minted the first time and saved in .local/identities.json: the running "
        "`make run` accepts it at once.",
    )
    parser.add_argument("accounts", nargs="*", metavar="ACCOUNT", help="a tenant's account id (default: acme)")
    parser.add_argument(
        "--local-dir",
        help=f"the .local folder of the running `make run` (default: {LOCAL_DIR_ENV}, else the first .local "
        "holding endpoints.json here or in a parent folder)",
    )
    args = parser.parse_args(argv)
    for account_id in args.accounts:
        try:
            tenant_tags(account_id)
        except ValueError as error:
            parser.error(str(error))
    try:
        endpoints = local_endpoints(args.local_dir)
        check_answers(endpoints.folder, endpoints.api_url)
    except LocalSystemError as error:
        print(f"python -m local.identities: {error}", file=sys.stderr)
        return 1
    path = endpoints.identities
    tenants = [mint_tenant(account_id, path) for account_id in args.accounts or [DEFAULT_TENANT]]
    print(f"API={shlex.quote(endpoints.api_url)}")
    print(f"SIGV4={sigv4_scope(endpoints.region)}")
    for line in signing_variables("ADMIN", Identities.load(path).admin, endpoints.region):
        print(line)
    for tenant in tenants:
        for line in signing_variables(shell_name(tenant.tags[TENANT_TAG_KEY]), tenant, endpoints.region):
            print(line)
    if args.accounts:
        print(
            f"# kept in {path}; the running `make run` accepts them now, for each account's own paths", file=sys.stderr
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
