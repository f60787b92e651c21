"""The JWT authorizer (`-c authorizer=jwt`): a Lambda TOKEN authorizer verifying bearer tokens of
an OIDC issuer (functions/authorizer/), whose policy API Gateway caches per token."""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from constructs import Construct

from functions.shared.config import FunctionEnvironment, JwtSettings
from infra.function_settings import AUTHORIZER_FUNCTION
from infra.python_function import SharedSettings, python_function

# API Gateway caches an authorizer's policy per token this long (0 to 3600 s).
AUTHORIZER_CACHE_SECONDS: Final = 300


class JwtAuthorizer(Construct):
    """The authorizer function and API Gateway's TOKEN authorizer that runs it."""

    def __init__(
        self, scope: Construct, construct_id: str, *, shared: SharedSettings, table_name: str, jwt: JwtSettings
    ) -> None:
        super().__init__(scope, construct_id)
        self.function = python_function(
            self,
            AUTHORIZER_FUNCTION,
            shared=shared,
            environment=FunctionEnvironment(
                table_name=table_name,  # every function gets it; this one calls no AWS API at all
                jwt_issuer=jwt.issuer,
                jwt_audience=jwt.audience,
                jwt_tenant_claim=jwt.tenant_claim,
                jwt_admin_scope=jwt.admin_scope,
            ),
        )
        self.authorizer = apigateway.TokenAuthorizer(
            self,
            "Authorizer",
            handler=self.function,
            identity_source=apigateway.IdentitySource.header("Authorization"),
            results_cache_ttl=cdk.Duration.seconds(AUTHORIZER_CACHE_SECONDS),
        )
