"""Settings every function of the stack shares."""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from functions.core import schema
from infra import constants, settings
from infra.bundling import LAMBDA_RUNTIME, LambdaPackage


def python_function(
    scope: Construct,
    construct_id: str,
    *,
    package: LambdaPackage,
    handler: str,
    table_name: str,
    timeout_seconds: int,
    memory_mb: int,
    description: str,
    extra_environment: Mapping[str, str] | None = None,
) -> lambda_.Function:
    # An explicit log group (instead of `log_retention`) sets the retention without the custom
    # resource Lambda that `log_retention` deploys, and lets the removal policy cover the logs.
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
        schema.ENV_TOMBSTONE_RETENTION_SECONDS: str(constants.TOMBSTONE_RETENTION_SECONDS),
        **(extra_environment or {}),
    }
    return lambda_.Function(
        scope,
        construct_id,
        code=package.code,
        handler=handler,
        runtime=LAMBDA_RUNTIME,
        # Always the architecture the package's wheels were installed for.
        architecture=package.architecture,
        timeout=cdk.Duration.seconds(timeout_seconds),
        memory_size=memory_mb,
        tracing=lambda_.Tracing.ACTIVE,
        log_group=log_group,
        environment=environment,
        description=description,
    )
