"""What a verified JWT may call: the same rules as the tenant and admin roles of IAM authorization
(infra/access.py, docs/security.md). A token whose tenant claim names an account may `GET` that
account and its types and call every method under its resources, every type's included, but never
`PUT` a limit; a token with the admin scope may call everything. The IAM policy API Gateway reads
is the authorizer's to write (functions/authorizer/policy.py); infra/access.py gives the tenant role
the same `tenant_paths`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from functions.core.model import ID_PATTERN

_ACCOUNT_ID = re.compile(ID_PATTERN)


@dataclass(frozen=True)
class TokenRules:
    tenant_claim: str  # the claim naming the caller's account ("tenant", or Cognito's "custom:tenant")
    admin_scope: str  # a scope (in `scope`, or a Cognito group) that may call everything


@dataclass(frozen=True)
class TokenAccess:
    """What one verified token may do: everything (admin), one tenant's paths, or nothing."""

    principal: str
    tenant: str | None  # only an id the API accepts: a claim of "*" or "a/b" must widen nothing
    admin: bool


def token_access(claims: Mapping[str, Any], rules: TokenRules) -> TokenAccess:
    """The access a token with these (verified) claims has."""
    tenant = claims.get(rules.tenant_claim)
    return TokenAccess(
        principal=str(claims.get("sub", "unknown")),
        tenant=tenant if isinstance(tenant, str) and _ACCOUNT_ID.fullmatch(tenant) else None,
        admin=rules.admin_scope in _scopes(claims),
    )


def tenant_paths(tenant: str) -> list[tuple[str, str]]:
    """The (method, path) patterns a tenant may invoke, in IAM's wildcards (`*` spans `/`): the
    tenant role's too (infra/access.py). A type's name has no `/`, and the function only routes
    `types/<type>/resources...` to a type's resources; `GET` alone on `types/*`, so no limit is set."""
    account = f"accounts/{tenant}"
    return [
        ("GET", account),
        ("GET", f"{account}/admission"),
        ("GET", f"{account}/history"),
        ("*", f"{account}/resources"),
        ("*", f"{account}/resources/*"),
        ("GET", f"{account}/types"),
        ("GET", f"{account}/types/*"),
        ("*", f"{account}/types/*/resources"),
        ("*", f"{account}/types/*/resources/*"),
    ]


def _scopes(claims: Mapping[str, Any]) -> set[str]:
    scopes = claims.get("scope")
    found = set(scopes.split()) if isinstance(scopes, str) else set()
    groups = claims.get("cognito:groups")
    if isinstance(groups, list):
        found.update(group for group in groups if isinstance(group, str))
    return found
