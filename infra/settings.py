"""The app's deployment choices, read from CDK context (`-c key=value` or cdk.json) into the
`HybridCounterProps` of its one counter (infra/props.py holds the defaults and the limits).

A refused value names its context key, as the deployer typed it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from functions.core.rate_limits import DEFAULT_TENANT_RATE, TenantRate
from infra import constants
from infra.props import (
    ApiLogsRole,
    ExistingTable,
    HybridCounterProps,
    IamAuthorization,
    InvalidProps,
    JwtAuthorization,
    UsageWebhook,
)

T = TypeVar("T")

_REMOVAL_POLICIES = {
    constants.REMOVAL_POLICY_RETAIN: cdk.RemovalPolicy.RETAIN,
    constants.REMOVAL_POLICY_DESTROY: cdk.RemovalPolicy.DESTROY,
}
_ARCHITECTURES = {
    constants.ARCHITECTURE_ARM64: lambda_.Architecture.ARM_64,
    constants.ARCHITECTURE_X86_64: lambda_.Architecture.X86_64,
}
# Context key -> the whole-number prop it sets.
_WHOLE_NUMBERS = {
    constants.STREAM_BATCHING_WINDOW_CONTEXT_KEY: "stream_batching_window_seconds",
    constants.STREAM_PARALLELIZATION_CONTEXT_KEY: "stream_parallelization_factor",
    constants.API_RATE_LIMIT_CONTEXT_KEY: "api_rate_limit",
    constants.API_BURST_LIMIT_CONTEXT_KEY: "api_burst_limit",
    constants.IDEMPOTENCY_WINDOW_CONTEXT_KEY: "idempotency_window_seconds",
    constants.TABLE_MAX_READS_CONTEXT_KEY: "table_max_read_request_units",
    constants.TABLE_MAX_WRITES_CONTEXT_KEY: "table_max_write_request_units",
}
# A refused prop (InvalidProps.field_name) -> the context key that set it.
_KEY_OF_PROP = {
    **{prop: key for key, prop in _WHOLE_NUMBERS.items()},
    "alarm_email": constants.ALARM_EMAIL_CONTEXT_KEY,
    "issuer": constants.JWT_ISSUER_CONTEXT_KEY,
    "audience": constants.JWT_AUDIENCE_CONTEXT_KEY,
    "tenant_claim": constants.JWT_TENANT_CLAIM_CONTEXT_KEY,
    "admin_scope": constants.JWT_ADMIN_SCOPE_CONTEXT_KEY,
    "url": constants.USAGE_WEBHOOK_URL_CONTEXT_KEY,
    "secret_arn": constants.USAGE_WEBHOOK_SECRET_CONTEXT_KEY,
    "header": constants.USAGE_WEBHOOK_HEADER_CONTEXT_KEY,
}


def props_from_context(scope: Construct) -> HybridCounterProps:
    """The counter's props: each context key that is set, the props' default for each one that is not."""
    given: dict[str, Any] = {
        prop: _number(value)
        for key, prop in _WHOLE_NUMBERS.items()
        if (value := scope.node.try_get_context(key)) is not None
    }
    email = scope.node.try_get_context(constants.ALARM_EMAIL_CONTEXT_KEY)
    try:
        return HybridCounterProps(
            authorization=_authorization(scope),
            alarm_email=str(email) if email else None,
            removal_policy=_choice(
                scope, constants.REMOVAL_POLICY_CONTEXT_KEY, constants.DEFAULT_REMOVAL_POLICY, _REMOVAL_POLICIES
            ),
            architecture=_choice(
                scope, constants.ARCHITECTURE_CONTEXT_KEY, constants.DEFAULT_ARCHITECTURE, _ARCHITECTURES
            ),
            api_logs_role=_choice(
                scope,
                constants.API_LOGS_ROLE_CONTEXT_KEY,
                constants.API_LOGS_ROLE_CREATE,
                {role.value: role for role in ApiLogsRole},
            ),
            tenant_rate=_tenant_rate(scope),
            existing_table=_existing_table(scope),
            usage_webhook=_usage_webhook(scope),
            **given,
        )
    except InvalidProps as refused:
        raise ValueError(f'context "{_KEY_OF_PROP[refused.field_name]}" {refused.reason}') from refused


def _number(value: object) -> object:
    """A context value as a whole number if it reads as one (the CLI's values are strings), else
    as given, for the props to refuse with the value the deployer typed."""
    try:
        return int(str(value).strip())
    except ValueError:
        return value


def _authorization(scope: Construct) -> IamAuthorization | JwtAuthorization:
    """`iam` (SigV4, the tenant and admin roles) or `jwt` (an OIDC issuer's bearer tokens)."""
    names = (constants.AUTHORIZER_IAM, constants.AUTHORIZER_JWT)
    chosen = _choice(scope, constants.AUTHORIZER_CONTEXT_KEY, constants.AUTHORIZER_IAM, {name: name for name in names})
    if chosen == constants.AUTHORIZER_IAM:
        return IamAuthorization()

    def text(key: str, default: str | None = None) -> str:
        value = scope.node.try_get_context(key)
        value = default if value is None else str(value).strip()
        if not value:
            raise ValueError(f'context "{key}" is required with -c {constants.AUTHORIZER_CONTEXT_KEY}=jwt')
        return value

    return JwtAuthorization(
        issuer=text(constants.JWT_ISSUER_CONTEXT_KEY),  # as configured: tokens' `iss` must equal it exactly
        audience=text(constants.JWT_AUDIENCE_CONTEXT_KEY),
        tenant_claim=text(constants.JWT_TENANT_CLAIM_CONTEXT_KEY, constants.DEFAULT_JWT_TENANT_CLAIM),
        admin_scope=text(constants.JWT_ADMIN_SCOPE_CONTEXT_KEY, constants.DEFAULT_JWT_ADMIN_SCOPE),
    )


def _tenant_rate(scope: Construct) -> TenantRate:
    """Every tenant's default rate limit: requests a second, over windows of a few seconds."""
    default = DEFAULT_TENANT_RATE
    rate = _whole(scope, constants.TENANT_RATE_LIMIT_CONTEXT_KEY, default.requests_per_second, 1)
    window = _whole(scope, constants.TENANT_BURST_SECONDS_CONTEXT_KEY, default.window_seconds, 1)
    try:
        return TenantRate(requests_per_second=rate, window_seconds=window)
    except ValueError as error:
        keys = f'"{constants.TENANT_RATE_LIMIT_CONTEXT_KEY}" and "{constants.TENANT_BURST_SECONDS_CONTEXT_KEY}"'
        raise ValueError(f"context {keys} ({rate}, {window}): {error}") from error


def _usage_webhook(scope: Construct) -> UsageWebhook | None:
    """The webhook of usage events (`-c usageWebhookUrl -c usageWebhookSecretArn`), or None."""
    url = scope.node.try_get_context(constants.USAGE_WEBHOOK_URL_CONTEXT_KEY)
    secret = scope.node.try_get_context(constants.USAGE_WEBHOOK_SECRET_CONTEXT_KEY)
    header = scope.node.try_get_context(constants.USAGE_WEBHOOK_HEADER_CONTEXT_KEY)
    if url is None and secret is None:
        return None
    if not url or not secret:
        keys = f'"{constants.USAGE_WEBHOOK_URL_CONTEXT_KEY}" and "{constants.USAGE_WEBHOOK_SECRET_CONTEXT_KEY}"'
        raise ValueError(f"context {keys} go together: the endpoint and the secret holding its API key")
    return UsageWebhook(str(url), str(secret), str(header or constants.DEFAULT_USAGE_WEBHOOK_HEADER))


def _existing_table(scope: Construct) -> ExistingTable | None:
    """The table the stack uses without owning it (`-c tableName -c tableStreamArn`), or None: its own."""
    name = scope.node.try_get_context(constants.EXISTING_TABLE_NAME_CONTEXT_KEY)
    stream = scope.node.try_get_context(constants.EXISTING_TABLE_STREAM_CONTEXT_KEY)
    if name is None and stream is None:
        return None
    try:
        return ExistingTable(name=str(name or ""), stream_arn=str(stream or ""))
    except InvalidProps as refused:
        keys = f'"{constants.EXISTING_TABLE_NAME_CONTEXT_KEY}" and "{constants.EXISTING_TABLE_STREAM_CONTEXT_KEY}"'
        raise ValueError(
            f"context {keys} go together: the table's name and its stream's ARN, got {name!r}, {stream!r}"
        ) from refused


def _whole(scope: Construct, key: str, default: int, least: int) -> int:
    value = scope.node.try_get_context(key)
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        number = least - 1
    if number < least:
        raise ValueError(f'context "{key}" must be a whole number, at least {least}, got {value!r}')
    return number


def _choice(scope: Construct, key: str, default: str, choices: Mapping[str, T]) -> T:
    """The context value named `key` (case and spaces ignored), one of `choices`; clear error otherwise."""
    value = scope.node.try_get_context(key)
    if value is None:
        value = default
    chosen = choices.get(str(value).strip().lower())
    if chosen is None:
        allowed = ", ".join(f'"{name}"' for name in choices)
        raise ValueError(f'context "{key}" must be one of {allowed}, got {value!r}')
    return chosen


def skip_bundling(scope: Construct) -> bool:
    value = scope.node.try_get_context(constants.SKIP_BUNDLING_CONTEXT_KEY)
    # CLI context values arrive as strings, cdk.json and App(context=...) values may be booleans.
    return value is True or str(value).strip().lower() == "true"
