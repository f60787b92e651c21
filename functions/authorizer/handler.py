"""JWT authorizer (API Gateway TOKEN authorizer), deployed with `-c authorizer=jwt`: end users call
the API directly with a bearer token from any OIDC issuer (Cognito included).

A token that fails verification is answered 401 by API Gateway (this function raises
"Unauthorized", the one error API Gateway turns into a 401); a valid token gets the policy of
functions/authorizer/policy.py, which API Gateway caches per token and applies to each request:
another tenant's path is then a 403 before the API function runs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.adapters.jwt_tokens import InvalidToken, JwtVerifier
from functions.authorizer.policy import access_policy
from functions.core.token_access import TokenRules
from functions.shared.config import FunctionEnvironment, JwtSettings
from functions.shared.observability import logger

BEARER = "bearer "


@lru_cache(maxsize=1)
def settings() -> JwtSettings:
    return FunctionEnvironment.from_env().jwt()


@lru_cache(maxsize=1)
def verifier() -> JwtVerifier:
    return JwtVerifier(settings().issuer, settings().audience)


@lru_cache(maxsize=1)
def rules() -> TokenRules:
    return TokenRules(tenant_claim=settings().tenant_claim, admin_scope=settings().admin_scope)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    header = str(event.get("authorizationToken") or "")
    token = header[len(BEARER) :] if header.lower().startswith(BEARER) else header
    try:
        claims = verifier().claims(token.strip())
    except InvalidToken as error:
        logger.info("token refused", extra={"reason": str(error)})
        raise Exception("Unauthorized") from error
    return access_policy(claims, str(event["methodArn"]), rules())
