"""What a verified JWT may call: the IAM policy a Lambda authorizer returns to API Gateway.

The same rules as the tenant and admin roles of IAM authorization (infra/access.py, docs/security.md):
a token whose tenant claim names an account may `GET` that account and its types and call every
method under its resources, every type's included, but never `PUT` a limit; a token with the admin
scope may call everything. API Gateway caches the policy per
token and checks every later request of that token against it, so the policy covers all the
token may do, not just the method that asked.
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


def access_policy(claims: Mapping[str, Any], method_arn: str, rules: TokenRules) -> dict[str, Any]:
    """The authorizer's answer for a token with these (verified) claims."""
    # arn:aws:execute-api:REGION:ACCOUNT:API/STAGE/METHOD/PATH: the policy is on this API and stage.
    api_and_stage = "/".join(method_arn.split("/", 2)[:2])
    tenant = claims.get(rules.tenant_claim)
    # Only an id the API accepts goes into a resource ARN: a claim of "*" or "a/b" must widen nothing.
    tenant = tenant if isinstance(tenant, str) and _ACCOUNT_ID.fullmatch(tenant) else None
    admin = rules.admin_scope in _scopes(claims)
    if admin:
        resources = [f"{api_and_stage}/*/*"]
    elif tenant is not None:
        resources = [f"{api_and_stage}/{method}/{path}" for method, path in tenant_paths(tenant)]
    else:
        resources = []
    statement = (
        {"Effect": "Allow", "Action": "execute-api:Invoke", "Resource": resources}
        if resources
        else {"Effect": "Deny", "Action": "execute-api:Invoke", "Resource": f"{api_and_stage}/*/*"}
    )
    return {
        "principalId": str(claims.get("sub", "unknown")),
        "policyDocument": {"Version": "2012-10-17", "Statement": [statement]},
        # Passed to the function as requestContext.authorizer, and to the access log.
        "context": {"tenant": tenant or "", "admin": "true" if admin else "false"},
    }


def tenant_paths(tenant: str) -> list[tuple[str, str]]:
    """The (method, path) patterns a tenant may invoke, in IAM's wildcards (`*` spans `/`): the
    tenant role's too (infra/access.py). A type's name has no `/`, and the function only routes
    `types/<type>/resources...` to a type's resources; `GET` alone on `types/*`, so no limit is set."""
    account = f"accounts/{tenant}"
    return [
        ("GET", account),
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
