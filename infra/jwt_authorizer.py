"""The JWT authorizer (`-c authorizer=jwt`): a Lambda TOKEN authorizer verifying bearer tokens of
an OIDC issuer (functions/authorizer/), whose policy API Gateway caches per token."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from constructs import Construct

from functions.shared.config import FunctionEnvironment, JwtSettings
from infra import constants
from infra.python_function import SharedSettings, python_function


class JwtAuthorizer(Construct):
    """The authorizer function and API Gateway's TOKEN authorizer that runs it."""

    def __init__(
        self, scope: Construct, construct_id: str, *, shared: SharedSettings, table_name: str, jwt: JwtSettings
    ) -> None:
        super().__init__(scope, construct_id)
        self.function = python_function(
            self,
            constants.AUTHORIZER_FUNCTION,
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
            results_cache_ttl=cdk.Duration.seconds(constants.AUTHORIZER_CACHE_SECONDS),
        )
