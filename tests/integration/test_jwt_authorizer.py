"""The JWT authorizer (`-c authorizer=jwt`, docs/security.md) through the whole local system: the
stack synthesized in that mode, its token authorizer function run by the local gateway against a
real OIDC issuer on 127.0.0.1. A refused token never reaches the API function and writes nothing."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from functions.adapters.jwt_tokens import InvalidToken, JwtVerifier
from infra import options
from local.http_client import HttpApi, Reply
from tests.support.oidc import OidcIssuer, new_key

AUDIENCE = "counter-api"

pytestmark = [
    pytest.mark.skipif(
        bool(os.environ.get("API_URL")), reason="runs its own local system with -c authorizer=jwt, not a deployment"
    ),
    pytest.mark.shares_setup,  # the JWT system its module fixture starts
]


@dataclass
class JwtSystem:
    api: HttpApi  # unsigned: each call carries its bearer token
    issuer: OidcIssuer

    def call(self, token: str | None, method: str, path: str, body: object = None) -> Reply:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else None
        return self.api.request(method, path, body, headers)

    def tenant(self, account_id: str) -> str:
        return self.issuer.token(AUDIENCE, tenant=account_id)

    def admin(self) -> str:
        return self.issuer.token(AUDIENCE, scope=f"openid {options.JWT_ADMIN_SCOPE.default}")


@pytest.fixture(scope="module")
def jwt_system() -> Iterator[JwtSystem]:
    from local.emulator import EmulatorProcess
    from local.product import runtime_settings
    from local.runtime import LocalRuntime

    # Auth0's form of issuer, ending in "/": compared as configured, never trimmed.
    with OidcIssuer(path="/") as issuer, EmulatorProcess() as emulator:
        context = {
            options.AUTHORIZER.key: options.Authorizer.JWT.value,
            options.JWT_ISSUER.key: issuer.url,
            options.JWT_AUDIENCE.key: AUDIENCE,
        }
        runtime = LocalRuntime(runtime_settings(emulator.url, port=0, context=context))
        runtime.deploy_and_start()
        try:
            yield JwtSystem(api=HttpApi(runtime.api_url), issuer=issuer)
        finally:
            runtime.stop()


def refused(reply: Reply, status: int, code: str) -> None:
    assert reply.status == status, reply.body
    assert reply.body["error"]["code"] == code, reply.body
    assert reply.body["error"]["requestId"]


def test_an_admin_token_sets_limits_and_a_tenant_token_works_on_its_own_account(jwt_system: JwtSystem) -> None:
    account = f"jwt-{uuid.uuid4().hex[:8]}"
    assert jwt_system.call(jwt_system.admin(), "PUT", f"/accounts/{account}", {"limit": 2}).status == 200
    tenant = jwt_system.tenant(account)
    created = jwt_system.call(tenant, "POST", f"/accounts/{account}/resources", {"name": "r"})
    assert created.status == 201, created.body
    assert jwt_system.call(tenant, "GET", f"/accounts/{account}").body["bestEffort"] == 1
    resource = f"/accounts/{account}/resources/{created.body['resourceId']}"
    assert jwt_system.call(tenant, "DELETE", resource).status == 204


def test_a_tenant_token_reaches_no_other_account_and_sets_no_limit(jwt_system: JwtSystem) -> None:
    mine, theirs = (f"jwt-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for account in (mine, theirs):
        jwt_system.call(jwt_system.admin(), "PUT", f"/accounts/{account}", {"limit": 2})
    tenant = jwt_system.tenant(mine)
    refused(jwt_system.call(tenant, "POST", f"/accounts/{theirs}/resources", {"name": "r"}), 403, "AccessDenied")
    refused(jwt_system.call(tenant, "GET", f"/accounts/{theirs}"), 403, "AccessDenied")
    refused(jwt_system.call(tenant, "PUT", f"/accounts/{mine}", {"limit": 99}), 403, "AccessDenied")
    admin = jwt_system.admin()
    assert jwt_system.call(admin, "GET", f"/accounts/{theirs}").body["bestEffort"] == 0
    assert jwt_system.call(admin, "GET", f"/accounts/{mine}").body["limit"] == 2


@pytest.mark.parametrize(
    "token",
    ["missing", "garbage", "expired", "forged", "wrong audience", "tenant wildcard"],
)
def test_a_request_without_a_valid_token_is_refused_before_the_function(jwt_system: JwtSystem, token: str) -> None:
    account = f"jwt-{uuid.uuid4().hex[:8]}"
    jwt_system.call(jwt_system.admin(), "PUT", f"/accounts/{account}", {"limit": 2})
    tokens = {
        "missing": None,
        "garbage": "not.a.jwt",
        "expired": jwt_system.issuer.token(AUDIENCE, lifetime_seconds=-120, tenant=account),
        "forged": jwt_system.issuer.token(AUDIENCE, key=new_key(), tenant=account),
        "wrong audience": jwt_system.issuer.token("another-api", tenant=account),
        # Verified, but its tenant is not an account id: it must widen nothing.
        "tenant wildcard": jwt_system.issuer.token(AUDIENCE, tenant="*"),
    }
    reply = jwt_system.call(tokens[token], "POST", f"/accounts/{account}/resources", {"name": "r"})
    if token == "tenant wildcard":
        refused(reply, 403, "AccessDenied")
    else:
        refused(reply, 401, "Unauthorized")
    assert jwt_system.call(jwt_system.admin(), "GET", f"/accounts/{account}").body["bestEffort"] == 0


@pytest.mark.parametrize("path", ["", "/", "/pool", "/pool/"])
def test_the_issuer_is_compared_exactly_as_configured(path: str) -> None:
    """OIDC compares `iss` with the issuer's identifier as it is, a final "/" included (OpenID
    Connect Core 1.0, 3.1.3.7): a token of `https://x/` is not one of `https://x`, nor the reverse."""
    with OidcIssuer(path=path) as issuer:
        verifier = JwtVerifier(issuer.url, AUDIENCE)
        assert verifier.claims(issuer.token(AUDIENCE))["iss"] == issuer.url
        other = issuer.url.removesuffix("/") if issuer.url.endswith("/") else f"{issuer.url}/"
        with pytest.raises(InvalidToken, match="issuer"):
            verifier.claims(issuer.token(AUDIENCE, iss=other))
