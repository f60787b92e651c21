"""The app's deployment choices, read from CDK context (`-c key=value` or cdk.json) into the
`HybridCounterProps` of its one counter, as infra/options.py declares each option.

A refused value names its context key, as the deployer typed it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from constructs import Construct

from functions.core.model import TenantRate
from functions.core.rate_limits import DEFAULT_TENANT_RATE
from infra import options
from infra.options import Authorizer, Choice, WholeNumber
from infra.props import (
    ExistingTable,
    HybridCounterProps,
    IamAuthorization,
    InvalidProps,
    JwtAuthorization,
    UsageWebhook,
)

# A refused prop (InvalidProps.field_name) -> the context key that set it.
_REFUSABLE = (*options.WHOLE_NUMBERS, options.ALARM_EMAIL, *options.AUTHORIZATION.keys, *options.USAGE_WEBHOOK.keys)
_KEY_OF_PROP = {option.prop: option.key for option in _REFUSABLE}


def props_from_context(scope: Construct) -> HybridCounterProps:
    """The counter's props: each context key that is set, the props' default for each one that is not."""
    numbers = {option.prop: _number(value) for option, value in _given(scope, options.WHOLE_NUMBERS)}
    choices = {option.prop: _choice(scope, option) for option in options.CHOICES}
    email = scope.node.try_get_context(options.ALARM_EMAIL.key)
    given: dict[str, Any] = {**numbers, **choices}
    try:
        return HybridCounterProps(
            authorization=_authorization(scope),
            alarm_email=str(email) if email else None,
            tenant_rate=_tenant_rate(scope),
            existing_table=_existing_table(scope),
            usage_webhook=_usage_webhook(scope),
            **given,
        )
    except InvalidProps as refused:
        raise ValueError(f'context "{_KEY_OF_PROP[refused.field_name]}" {refused.reason}') from refused


def _given(scope: Construct, keys: tuple[WholeNumber[int | None], ...]) -> list[tuple[WholeNumber[int | None], object]]:
    """The options among `keys` the context sets, with the values it gives them."""
    return [(option, value) for option in keys if (value := scope.node.try_get_context(option.key)) is not None]


def _number(value: object) -> object:
    """A context value as a whole number if it reads as one (the CLI's values are strings), else
    as given, for the props to refuse with the value the deployer typed."""
    try:
        return int(str(value).strip())
    except ValueError:
        return value


def _choice(scope: Construct, option: Choice[Any]) -> Any:
    """The value the context names for `option` (case and spaces ignored), its default if unset."""
    value = scope.node.try_get_context(option.key)
    if value is None:
        value = option.default
    chosen = option.named(value)
    if chosen is None:
        allowed = ", ".join(f'"{name}"' for name in option.choices)
        raise ValueError(f'context "{option.key}" must be one of {allowed}, got {value!r}')
    return chosen


def _authorization(scope: Construct) -> IamAuthorization | JwtAuthorization:
    """`iam` (SigV4, the tenant and admin roles) or `jwt` (an OIDC issuer's bearer tokens)."""
    if _choice(scope, options.AUTHORIZER) == Authorizer.IAM:
        return IamAuthorization()

    def text(option: options.Text[str | None]) -> str:
        value = scope.node.try_get_context(option.key)
        value = option.default if value is None else str(value).strip()
        if not value:
            raise ValueError(f'context "{option.key}" is required with -c {options.AUTHORIZER.key}={Authorizer.JWT}')
        return value

    return JwtAuthorization(
        issuer=text(options.JWT_ISSUER),  # as configured: tokens' `iss` must equal it exactly
        audience=text(options.JWT_AUDIENCE),
        tenant_claim=text(options.JWT_TENANT_CLAIM),
        admin_scope=text(options.JWT_ADMIN_SCOPE),
    )


def _tenant_rate(scope: Construct) -> TenantRate:
    """Every tenant's default rate limit: requests a second, over windows of a few seconds."""
    given: dict[str, Any] = {}
    for option, value in _given(scope, (options.TENANT_RATE_LIMIT, options.TENANT_BURST_SECONDS)):
        given[option.prop] = number = _number(value)
        if (refusal := option.refusal(number)) is not None:
            raise ValueError(f'context "{option.key}" {refusal}')
    try:
        return dataclasses.replace(DEFAULT_TENANT_RATE, **given)
    except ValueError as error:
        rate, window = (options.TENANT_RATE_LIMIT, options.TENANT_BURST_SECONDS)
        chosen = f"({given.get(rate.prop, rate.default)}, {given.get(window.prop, window.default)})"
        raise ValueError(f'context "{rate.key}" and "{window.key}" {chosen}: {error}') from error


def _usage_webhook(scope: Construct) -> UsageWebhook | None:
    """The webhook of usage events (`-c usageWebhookUrl -c usageWebhookSecretArn`), or None."""
    url_key, secret_key = options.USAGE_WEBHOOK_URL.key, options.USAGE_WEBHOOK_SECRET.key
    url = scope.node.try_get_context(url_key)
    secret = scope.node.try_get_context(secret_key)
    header = scope.node.try_get_context(options.USAGE_WEBHOOK_HEADER.key)
    if url is None and secret is None:
        return None
    if not url or not secret:
        raise ValueError(
            f'context "{url_key}" and "{secret_key}" go together: the endpoint and the secret holding its API key'
        )
    return UsageWebhook(str(url), str(secret), str(header or options.USAGE_WEBHOOK_HEADER.default))


def _existing_table(scope: Construct) -> ExistingTable | None:
    """The table the stack uses without owning it (`-c tableName -c tableStreamArn`), or None: its own."""
    name_key, stream_key = options.EXISTING_TABLE_NAME.key, options.EXISTING_TABLE_STREAM.key
    name = scope.node.try_get_context(name_key)
    stream = scope.node.try_get_context(stream_key)
    if name is None and stream is None:
        return None
    try:
        return ExistingTable(name=str(name or ""), stream_arn=str(stream or ""))
    except InvalidProps as refused:
        raise ValueError(
            f'context "{name_key}" and "{stream_key}" go together: the table\'s name and its stream\'s ARN, '
            f"got {name!r}, {stream!r}"
        ) from refused


def skip_bundling(scope: Construct) -> bool:
    value = scope.node.try_get_context(options.SKIP_BUNDLING.key)
    # CLI context values arrive as strings, cdk.json and App(context=...) values may be booleans.
    return value is True or str(value).strip().lower() == "true"
