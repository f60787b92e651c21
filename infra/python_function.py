"""Settings every function of the stack shares."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from functions.shared.config import FunctionEnvironment
from infra.bundling import LAMBDA_RUNTIME, LambdaPackage
from infra.function_settings import LOG_LEVEL, POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_SERVICE_NAME, FunctionSettings


@dataclass(frozen=True)
class SharedSettings:
    """What every function of one counter shares: the code package (and the architecture it was
    built for), the removal policy of the logs (and of the counter's other stateful resources), and
    how long a tombstone keeps its Idempotency-Key."""

    package: LambdaPackage
    removal_policy: cdk.RemovalPolicy
    tombstone_retention: timedelta


def python_function(
    scope: Construct,
    function: FunctionSettings,
    *,
    shared: SharedSettings,
    environment: FunctionEnvironment,
    dead_letter_queue: sqs.IQueue | None = None,
) -> lambda_.Function:
    """A function of the counter. `environment`: what its code reads (functions/shared/config.py);
    every function also gets the counter's tombstone retention and Powertools' settings.
    `dead_letter_queue`: where Lambda puts an asynchronous invocation's event that failed every try."""
    construct_id = function.construct_id
    # An explicit log group (instead of `log_retention`) sets the retention without the custom
    # resource Lambda that `log_retention` deploys, and lets the removal policy cover the logs.
    log_group = logs.LogGroup(
        scope,
        f"{construct_id}Logs",
        retention=logs.RetentionDays.ONE_MONTH,
        removal_policy=shared.removal_policy,
    )
    variables = {
        **environment.model_copy(update={"tombstone_retention": shared.tombstone_retention}).variables(),
        "POWERTOOLS_SERVICE_NAME": POWERTOOLS_SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_METRICS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": LOG_LEVEL,
        # Tracing is active, and Powertools would put each traced handler's and method's response
        # and exception in X-Ray's metadata: API answers, stream records and their errors carry
        # tenants' data (docs/security.md). The API handler's decorator says so too.
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
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
        code=shared.package.code,
        handler=function.handler,
        runtime=LAMBDA_RUNTIME,
        # Always the architecture the package's wheels were installed for.
        architecture=shared.package.architecture,
        timeout=cdk.Duration.seconds(function.timeout_seconds),
        memory_size=function.memory_mb,
        tracing=lambda_.Tracing.ACTIVE,
        log_group=log_group,
        environment=variables,
        description=function.description,
        dead_letter_queue=dead_letter_queue,
    )
