"""The HTTP API: API Gateway (REST) proxying every route to the api function."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Final

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_logs as logs
from constructs import Construct

from functions.core.model import TenantRate
from functions.shared.config import FunctionEnvironment
from infra import table_access
from infra.function_settings import API_FUNCTION, HEAL_QUIET_SECONDS
from infra.gateway_errors import add_error_envelopes
from infra.props import ApiLogsRole
from infra.python_function import SharedSettings, python_function

REST_API_ID: Final = "RestApi"  # stable: it feeds the logical ids
API_STAGE_NAME: Final = "prod"

# One JSON line per request (API Gateway's $context variables). A tenant's session can reach only
# its own account's paths (infra/access.py), so `path` names the tenant; `principal` is the caller.
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "requestTime": "$context.requestTimeEpoch",
    "principal": "$context.identity.userArn",
    "tenant": "$context.authorizer.tenant",  # with the JWT authorizer: the token's tenant claim
    "sourceIp": "$context.identity.sourceIp",
    "method": "$context.httpMethod",
    "path": "$context.path",
    "status": "$context.status",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "responseType": "$context.error.responseType",
    "error": "$context.error.message",
    "userAgent": "$context.identity.userAgent",
}


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        shared: SharedSettings,
        tenant_rate: TenantRate,
        rate_limit: int,
        burst_limit: int,
        logs_role: ApiLogsRole,
        authorizer: apigateway.IAuthorizer | None = None,
    ) -> None:
        """`tenant_rate`: every tenant's default; `rate_limit`, `burst_limit`: the stage's throttle;
        `authorizer`: every method's (the JWT authorizer); None: every method signed with SigV4."""
        super().__init__(scope, construct_id)

        self.function = python_function(
            self,
            API_FUNCTION,
            shared=shared,
            environment=FunctionEnvironment(
                table_name=table.table_name,
                tenant_rate_limit=tenant_rate.requests_per_second,
                tenant_window_seconds=tenant_rate.window_seconds,
                # The age at which a lease is dead, as the sweeper judges it: a write that sees
                # many dead leases on its shard settles them (functions/core/accounts.py).
                quiet=timedelta(seconds=HEAL_QUIET_SECONDS),
            ),
        )
        table_access.grant_table(table, self.function, table_access.API, table_access.API_INDEXES)

        logging = logs_role != ApiLogsRole.NONE
        self.access_logs = (
            logs.LogGroup(
                self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=shared.removal_policy
            )
            if logging
            else None
        )
        self.rest_api = apigateway.LambdaRestApi(
            self,
            REST_API_ID,
            handler=self.function,
            # The function routes itself, so every path and method goes to it.
            proxy=True,
            # API Gateway logs only through the region's CloudWatch role: set here unless the account
            # has one (`-c apiGatewayCloudWatchRole=existing`), and kept when the stack is deleted.
            cloud_watch_role=logs_role == ApiLogsRole.CREATE,
            cloud_watch_role_removal_policy=cdk.RemovalPolicy.RETAIN if logs_role == ApiLogsRole.CREATE else None,
            # Every method signed with SigV4 and allowed by the caller's IAM policy (infra/access.py),
            # or, with `-c authorizer=jwt`, allowed by the policy the token authorizer returns.
            default_method_options=(
                apigateway.MethodOptions(authorization_type=apigateway.AuthorizationType.CUSTOM, authorizer=authorizer)
                if authorizer
                else apigateway.MethodOptions(authorization_type=apigateway.AuthorizationType.IAM)
            ),
            deploy_options=apigateway.StageOptions(
                stage_name=API_STAGE_NAME,
                tracing_enabled=True,
                # The outer guard: every method of the stage together; beyond it API Gateway answers 429.
                throttling_rate_limit=rate_limit,
                throttling_burst_limit=burst_limit,
                access_log_destination=(
                    apigateway.LogGroupLogDestination(self.access_logs) if self.access_logs else None
                ),
                access_log_format=apigateway.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS)) if logging else None,
                # Errors only, and never request or response bodies (they carry tenants' data).
                logging_level=apigateway.MethodLoggingLevel.ERROR if logging else None,
                data_trace_enabled=False,
                metrics_enabled=logging,
            ),
            description="Hybrid counter HTTP API",
        )
        add_error_envelopes(self.rest_api)

    @property
    def url(self) -> str:
        return self.rest_api.url
