"""What a verified JWT may call (functions/core/token_access.py), as the authorizer's policy
(functions/authorizer/policy.py): it mirrors the IAM roles."""

from __future__ import annotations

import pytest

from functions.authorizer.policy import access_policy
from functions.core.token_access import TokenRules
from local.iam_policy import allowed, execute_api_arn
from tests.support.tenant_paths import ADMIN_ONLY_PATHS, TENANT_ACME_PATHS

RULES = TokenRules(tenant_claim="tenant", admin_scope="counter/admin")
METHOD = "arn:aws:execute-api:us-east-1:123456789012:a1b2c3/prod/POST/accounts/acme/resources"
BASE = "arn:aws:execute-api:us-east-1:123456789012:a1b2c3/prod"


def statement(claims: dict[str, object]) -> dict[str, object]:
    [only] = access_policy(claims, METHOD, RULES)["policyDocument"]["Statement"]
    return only


def test_a_tenant_token_may_read_its_account_and_use_its_resources_only() -> None:
    assert statement({"sub": "u1", "tenant": "acme"}) == {
        "Effect": "Allow",
        "Action": "execute-api:Invoke",
        "Resource": [
            f"{BASE}/GET/accounts/acme",
            f"{BASE}/GET/accounts/acme/admission",
            f"{BASE}/GET/accounts/acme/history",
            f"{BASE}/*/accounts/acme/resources",
            f"{BASE}/*/accounts/acme/resources/*",
            f"{BASE}/GET/accounts/acme/types",
            f"{BASE}/GET/accounts/acme/types/*",
            f"{BASE}/*/accounts/acme/types/*/resources",
            f"{BASE}/*/accounts/acme/types/*/resources/*",
        ],
    }


@pytest.mark.parametrize(("method", "path", "may"), TENANT_ACME_PATHS)
def test_a_tenant_token_reaches_every_type_of_its_account_and_sets_no_limit(method: str, path: str, may: bool) -> None:
    """The policy as API Gateway evaluates it (IAM's matching: local/iam_policy.py), as the tenant
    role's (tests/runtime/test_iam_authorization.py)."""
    policy = access_policy({"sub": "u1", "tenant": "acme"}, METHOD, RULES)["policyDocument"]
    arn = execute_api_arn("us-east-1", "123456789012", "a1b2c3", "prod", method, path)
    assert allowed([policy], "execute-api:Invoke", arn, {}) is may


@pytest.mark.parametrize(("method", "path"), ADMIN_ONLY_PATHS)
def test_a_tenant_token_never_reaches_a_plan_or_removes_an_override(method: str, path: str) -> None:
    """API Gateway answers it 403 AccessDenied, in the envelope (docs/security.md); the admin may."""
    arn = execute_api_arn("us-east-1", "123456789012", "a1b2c3", "prod", method, path)
    tenant = access_policy({"sub": "u1", "tenant": "acme"}, METHOD, RULES)["policyDocument"]
    admin = access_policy({"sub": "ops", "scope": "counter/admin"}, METHOD, RULES)["policyDocument"]
    assert allowed([tenant], "execute-api:Invoke", arn, {}) is False
    assert allowed([admin], "execute-api:Invoke", arn, {}) is True


@pytest.mark.parametrize("claims", [{"scope": "openid counter/admin"}, {"cognito:groups": ["counter/admin"]}])
def test_the_admin_scope_or_group_may_call_everything(claims: dict[str, object]) -> None:
    assert statement({"sub": "ops", "tenant": "acme", **claims})["Resource"] == [f"{BASE}/*/*"]


@pytest.mark.parametrize("tenant", [None, "*", "acme/*", "a?c", "", 7, "x" * 65])
def test_a_token_without_a_valid_tenant_may_call_nothing(tenant: object) -> None:
    claims = {"sub": "u1", "scope": "counter/adminish"} | ({} if tenant is None else {"tenant": tenant})
    assert statement(claims) == {"Effect": "Deny", "Action": "execute-api:Invoke", "Resource": f"{BASE}/*/*"}


def test_the_function_hears_the_tenant_and_the_principal() -> None:
    answer = access_policy({"sub": "u1", "tenant": "acme"}, METHOD, RULES)
    assert answer["principalId"] == "u1"
    assert answer["context"] == {"tenant": "acme", "admin": "false"}
