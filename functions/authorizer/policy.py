"""The authorizer's answer to API Gateway: a token's access (functions/core/token_access.py) as the
IAM policy API Gateway caches per token and checks every later request of that token against, so
it covers all the token may do, not just the method that asked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from functions.core.token_access import TokenAccess, TokenRules, tenant_paths, token_access


def access_policy(claims: Mapping[str, Any], method_arn: str, rules: TokenRules) -> dict[str, Any]:
    """The authorizer's answer for a token with these (verified) claims."""
    return policy_of(token_access(claims, rules), method_arn)


def policy_of(access: TokenAccess, method_arn: str) -> dict[str, Any]:
    # arn:aws:execute-api:REGION:ACCOUNT:API/STAGE/METHOD/PATH: the policy is on this API and stage.
    api_and_stage = "/".join(method_arn.split("/", 2)[:2])
    if access.admin:
        resources = [f"{api_and_stage}/*/*"]
    elif access.tenant is not None:
        resources = [f"{api_and_stage}/{method}/{path}" for method, path in tenant_paths(access.tenant)]
    else:
        resources = []
    statement = (
        {"Effect": "Allow", "Action": "execute-api:Invoke", "Resource": resources}
        if resources
        else {"Effect": "Deny", "Action": "execute-api:Invoke", "Resource": f"{api_and_stage}/*/*"}
    )
    return {
        "principalId": access.principal,
        "policyDocument": {"Version": "2012-10-17", "Statement": [statement]},
        # Passed to the function as requestContext.authorizer, and to the access log.
        "context": {"tenant": access.tenant or "", "admin": "true" if access.admin else "false"},
    }
