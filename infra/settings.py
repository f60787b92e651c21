"""Deployment choices read from CDK context (`-c key=value` or cdk.json)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar
from urllib.parse import urlsplit

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from functions.core.rate_limits import DEFAULT_TENANT_RATE, TenantRate
from functions.shared.config import JwtSettings
from infra import constants

T = TypeVar("T")

_REMOVAL_POLICIES = {
    constants.REMOVAL_POLICY_RETAIN: cdk.RemovalPolicy.RETAIN,
    constants.REMOVAL_POLICY_DESTROY: cdk.RemovalPolicy.DESTROY,
}
_ARCHITECTURES = {
    constants.ARCHITECTURE_ARM64: lambda_.Architecture.ARM_64,
    constants.ARCHITECTURE_X86_64: lambda_.Architecture.X86_64,
}


def removal_policy(scope: Construct) -> cdk.RemovalPolicy:
    """What happens to stateful resources (table, queues, logs) when the stack is deleted.

    Retain by default so deleting a stack never loses counters or dead letters; `destroy` is for
    throw-away stacks (emulators, CI, experiments).
    """
    return _choice(scope, constants.REMOVAL_POLICY_CONTEXT_KEY, constants.DEFAULT_REMOVAL_POLICY, _REMOVAL_POLICIES)


def architecture(scope: Construct) -> lambda_.Architecture:
    """CPU architecture of the functions and of the wheels bundled for them.

    arm64 by default (cheaper on AWS); `x86_64` for emulators that run functions on an x86_64 host
    (LocalStack on most CI machines and PCs). Read once per stack, see `infra.bundling.lambda_package`.
    """
    return _choice(scope, constants.ARCHITECTURE_CONTEXT_KEY, constants.DEFAULT_ARCHITECTURE, _ARCHITECTURES)


def stream_batching_window_seconds(scope: Construct) -> int:
    """Seconds the consumer's event source gathers stream records before it invokes (0: at once)."""
    key = constants.STREAM_BATCHING_WINDOW_CONTEXT_KEY
    value = scope.node.try_get_context(key)
    if value is None:
        return constants.DEFAULT_STREAM_BATCHING_WINDOW_SECONDS
    try:
        seconds = int(str(value).strip())
    except ValueError:
        seconds = -1
    if not 0 <= seconds <= constants.MAX_STREAM_BATCHING_WINDOW_SECONDS:
        limit = constants.MAX_STREAM_BATCHING_WINDOW_SECONDS
        raise ValueError(f'context "{key}" must be a whole number of seconds from 0 to {limit}, got {value!r}')
    return seconds


def idempotency_window_seconds(scope: Construct) -> int:
    """How long a deleted resource's tombstone keeps its Idempotency-Key (TOMBSTONE_RETENTION_SECONDS)."""
    return _whole(
        scope,
        constants.IDEMPOTENCY_WINDOW_CONTEXT_KEY,
        constants.TOMBSTONE_RETENTION_SECONDS,
        constants.MIN_IDEMPOTENCY_WINDOW_SECONDS,
    )


def stream_parallelization_factor(scope: Construct) -> int:
    """Batches of one stream shard the consumer runs at once (ParallelizationFactor)."""
    factor = _whole(
        scope, constants.STREAM_PARALLELIZATION_CONTEXT_KEY, constants.DEFAULT_STREAM_PARALLELIZATION_FACTOR, 1
    )
    if factor > constants.MAX_STREAM_PARALLELIZATION_FACTOR:
        raise ValueError(
            f'context "{constants.STREAM_PARALLELIZATION_CONTEXT_KEY}" must be 1 to '
            f"{constants.MAX_STREAM_PARALLELIZATION_FACTOR}, got {factor}"
        )
    return factor


def api_throttle(scope: Construct) -> tuple[int, int]:
    """The stage's (rate, burst) limits: requests a second, and the bucket that absorbs bursts."""
    return (
        _whole(scope, constants.API_RATE_LIMIT_CONTEXT_KEY, constants.DEFAULT_API_RATE_LIMIT, 1),
        _whole(scope, constants.API_BURST_LIMIT_CONTEXT_KEY, constants.DEFAULT_API_BURST_LIMIT, 0),
    )


def tenant_rate(scope: Construct) -> TenantRate:
    """Every tenant's default rate limit: requests a second, over windows of a few seconds."""
    default = DEFAULT_TENANT_RATE
    rate = _whole(scope, constants.TENANT_RATE_LIMIT_CONTEXT_KEY, default.requests_per_second, 1)
    window = _whole(scope, constants.TENANT_BURST_SECONDS_CONTEXT_KEY, default.window_seconds, 1)
    try:
        return TenantRate(requests_per_second=rate, window_seconds=window)
    except ValueError as error:
        keys = f'"{constants.TENANT_RATE_LIMIT_CONTEXT_KEY}" and "{constants.TENANT_BURST_SECONDS_CONTEXT_KEY}"'
        raise ValueError(f"context {keys} ({rate}, {window}): {error}") from error


def authorizer(scope: Construct) -> str:
    """How callers are authorized: `iam` (SigV4) or `jwt` (an OIDC issuer's bearer tokens)."""
    names = (constants.AUTHORIZER_IAM, constants.AUTHORIZER_JWT)
    return _choice(scope, constants.AUTHORIZER_CONTEXT_KEY, constants.AUTHORIZER_IAM, {name: name for name in names})


def jwt_settings(scope: Construct) -> JwtSettings:
    """The JWT authorizer's issuer and audience (required), tenant claim and admin scope."""

    def text(key: str, default: str | None = None) -> str:
        value = scope.node.try_get_context(key)
        value = default if value is None else str(value).strip()
        if not value:
            raise ValueError(f'context "{key}" is required with -c {constants.AUTHORIZER_CONTEXT_KEY}=jwt')
        return value

    issuer = text(constants.JWT_ISSUER_CONTEXT_KEY)
    host = urlsplit(issuer).hostname or ""
    # Keys fetched over plain HTTP could be swapped on the way: only for an issuer on this machine.
    if not (issuer.startswith("https://") or (issuer.startswith("http://") and host in ("127.0.0.1", "localhost"))):
        raise ValueError(f'context "{constants.JWT_ISSUER_CONTEXT_KEY}" must be an https:// URL, got {issuer!r}')
    return JwtSettings(
        issuer=issuer,  # as configured: tokens' `iss` must equal it exactly
        audience=text(constants.JWT_AUDIENCE_CONTEXT_KEY),
        tenant_claim=text(constants.JWT_TENANT_CLAIM_CONTEXT_KEY, constants.DEFAULT_JWT_TENANT_CLAIM),
        admin_scope=text(constants.JWT_ADMIN_SCOPE_CONTEXT_KEY, constants.DEFAULT_JWT_ADMIN_SCOPE),
    )


def existing_table(scope: Construct) -> tuple[str, str] | None:
    """(name, stream ARN) of a table the stack uses without owning it, or None: the stack's own."""
    name = scope.node.try_get_context(constants.EXISTING_TABLE_NAME_CONTEXT_KEY)
    stream = scope.node.try_get_context(constants.EXISTING_TABLE_STREAM_CONTEXT_KEY)
    if name is None and stream is None:
        return None
    if not name or not stream or ":table/" not in str(stream) or "/stream/" not in str(stream):
        keys = f'"{constants.EXISTING_TABLE_NAME_CONTEXT_KEY}" and "{constants.EXISTING_TABLE_STREAM_CONTEXT_KEY}"'
        raise ValueError(f"context {keys} go together: the table's name and its stream's ARN, got {name!r}, {stream!r}")
    return str(name), str(stream)


def api_logs_role(scope: Construct) -> str:
    """Whether this stack sets the region's API Gateway CloudWatch role, uses the account's, or logs nothing."""
    choices = {
        name: name
        for name in (constants.API_LOGS_ROLE_CREATE, constants.API_LOGS_ROLE_EXISTING, constants.API_LOGS_ROLE_NONE)
    }
    return _choice(scope, constants.API_LOGS_ROLE_CONTEXT_KEY, constants.API_LOGS_ROLE_CREATE, choices)


def table_max_request_units(scope: Construct) -> tuple[int | None, int | None]:
    """The on-demand table's maximum (reads, writes) a second, or None: no maximum."""
    reads = scope.node.try_get_context(constants.TABLE_MAX_READS_CONTEXT_KEY)
    writes = scope.node.try_get_context(constants.TABLE_MAX_WRITES_CONTEXT_KEY)
    return (
        None if reads is None else _whole(scope, constants.TABLE_MAX_READS_CONTEXT_KEY, 0, 1),
        None if writes is None else _whole(scope, constants.TABLE_MAX_WRITES_CONTEXT_KEY, 0, 1),
    )


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
