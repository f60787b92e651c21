"""The HTTP API: API Gateway (REST) proxying every route to the api function."""

from __future__ import annotations

from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from functions.core import schema
from infra import constants, settings, table_access
from infra.bundling import LambdaPackage
from infra.gateway_errors import add_error_envelopes
from infra.python_function import python_function


class Api(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, table: dynamodb.Table, package: LambdaPackage) -> None:
        super().__init__(scope, construct_id)

        tenant_rate = settings.tenant_rate(self)
        self.function = python_function(
            self,
            constants.API_FUNCTION_ID,
            package=package,
            handler=constants.API_HANDLER,
            table_name=table.table_name,
            timeout_seconds=constants.API_TIMEOUT_SECONDS,
            memory_mb=constants.API_MEMORY_MB,
            description="Accounts and resources HTTP API",
            extra_environment={
                schema.ENV_TENANT_RATE_LIMIT: str(tenant_rate.requests_per_second),
                schema.ENV_TENANT_BURST_LIMIT: str(tenant_rate.burst),
            },
        )
        table_access.grant_table(table, self.function, table_access.API)

        rate, burst = settings.api_throttle(self)
        self.rest_api = apigateway.LambdaRestApi(
            self,
            constants.REST_API_ID,
            handler=self.function,
            # The function routes itself, so every path and method goes to it.
            proxy=True,
            # The account-wide CloudWatch role is a one-per-region setting that a stack should not own.
            cloud_watch_role=False,
            # Every method signed with SigV4 and allowed by the caller's IAM policy (infra/access.py).
            default_method_options=apigateway.MethodOptions(authorization_type=apigateway.AuthorizationType.IAM),
            deploy_options=apigateway.StageOptions(
                stage_name=constants.API_STAGE_NAME,
                tracing_enabled=True,
                # The outer guard: every method of the stage together; beyond it API Gateway answers 429.
                throttling_rate_limit=rate,
                throttling_burst_limit=burst,
            ),
            description="Hybrid counter HTTP API",
        )
        add_error_envelopes(self.rest_api)

    @property
    def url(self) -> str:
        return self.rest_api.url
