"""Settings every function of the stack shares."""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from functions.core import schema
from infra import constants, settings
from infra.bundling import LAMBDA_RUNTIME, LambdaPackage


def python_function(
    scope: Construct,
    function: constants.FunctionSettings,
    *,
    package: LambdaPackage,
    table_name: str,
    extra_environment: Mapping[str, str] | None = None,
) -> lambda_.Function:
    # An explicit log group (instead of `log_retention`) sets the retention without the custom
    # resource Lambda that `log_retention` deploys, and lets the removal policy cover the logs.
    construct_id = function.construct_id
    log_group = logs.LogGroup(
        scope,
        f"{construct_id}Logs",
        retention=logs.RetentionDays.ONE_MONTH,
        removal_policy=settings.removal_policy(scope),
    )
    environment = {
        schema.ENV_TABLE_NAME: table_name,
        "POWERTOOLS_SERVICE_NAME": constants.POWERTOOLS_SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": constants.POWERTOOLS_METRICS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": constants.LOG_LEVEL,
        # Tracing is active, and Powertools would put each traced handler's and method's response
        # and exception in X-Ray's metadata: API answers, stream records and their errors carry
        # tenants' data (docs/security.md). The API handler's decorator says so too.
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
        schema.ENV_TOMBSTONE_RETENTION_SECONDS: str(settings.idempotency_window_seconds(scope)),
        **(extra_environment or {}),
    }
    # Its own role, allowed to write its own log group and nothing else yet (the construct that owns
    # the function grants what its code calls). The AWS managed AWSLambdaBasicExecutionRole would
    # allow writing to any log group of the account.
    role = iam.Role(
        scope,
        f"{construct_id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"{construct_id}: its log group, and what its code calls",
    )
    log_group.grant_write(role)
    return lambda_.Function(
        scope,
        construct_id,
        role=role,
        code=package.code,
        handler=function.handler,
        runtime=LAMBDA_RUNTIME,
        # Always the architecture the package's wheels were installed for.
        architecture=package.architecture,
        timeout=cdk.Duration.seconds(function.timeout_seconds),
        memory_size=function.memory_mb,
        tracing=lambda_.Tracing.ACTIVE,
        log_group=log_group,
        environment=environment,
        description=function.description,
    )
