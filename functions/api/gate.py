"""What a request passes once the resolver has matched its route, before Powertools validates it.

Three middlewares, in this order (`MIDDLEWARES`, which handler.py gives `app.use`):

1. `refuse_unreadable_body`: a body over 64 KiB is a 413, one that is not UTF-8 a 400, before
   anything reads it;
2. `limit_tenant_rate`: a tenant over its rate gets a 429 before its request costs a body parse.
   A request counts against the account its route names (the `accountId` path parameter), unless
   the route is marked `exempt_from_tenant_rate`; a path the API does not have names none;
3. `refuse_unknown_query_parameters`: a query parameter the route does not declare is a 400 (a
   typo, `?limt=5`, would otherwise be dropped and the default used).

When validation is enabled on the resolver, Powertools validates a request (and so parses its
body) before every middleware; handler.py therefore leaves it off, and Powertools' own request
validation runs as the last of `MIDDLEWARES`, after these three.
"""

from __future__ import annotations

import base64
import inspect
import re
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import Route
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import OpenAPIRequestValidationMiddleware
from aws_lambda_powertools.metrics import MetricUnit

from functions.api import errors
from functions.api.routed import wired
from functions.core.model import ID_PATTERN
from functions.core.rate_limits import TENANT_LOG_KEY, THROTTLED_TENANT_MESSAGE
from functions.shared.observability import logger, metrics

MAX_BODY_BYTES = 64 * 1024
ACCOUNT_ID = re.compile(ID_PATTERN)

RouteFunction = TypeVar("RouteFunction", bound=Callable[..., Any])
_exempt: set[Callable[..., Any]] = set()


def exempt_from_tenant_rate(route: RouteFunction) -> RouteFunction:
    """Mark a route whose requests do not count against the tenant's rate (and the routes that
    wrap it, as functions/api/router.py routes an operation in each family)."""
    _exempt.add(route)
    return route


def body_size(body: str | None, base64_encoded: bool) -> int:
    size = len((body or "").encode("utf-8", "surrogatepass"))  # a lone surrogate is refused later, as a 400
    return size * 3 // 4 if base64_encoded else size


def is_utf8(body: str | None, base64_encoded: bool) -> bool:
    """API Gateway passes a body that is not UTF-8 base64-encoded; the resolver would fail to decode it."""
    if not base64_encoded or not body:
        return True
    try:
        base64.b64decode(body).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def counted_account(route: Route, path_parameters: dict[str, Any]) -> str | None:
    """The account whose rate a request on `route` counts against, if any."""
    account = path_parameters.get("accountId")
    if inspect.unwrap(route.func) in _exempt or not isinstance(account, str) or not ACCOUNT_ID.fullmatch(account):
        return None
    return account


def unknown_query_parameters(route: Route, sent: Iterable[str]) -> list[str]:
    """The parameters sent that `route` does not declare, sorted."""
    return sorted(set(sent) - {parameter.alias for parameter in route.dependant.query_params})


def matched_route(app: APIGatewayRestResolver) -> Route:
    """The route the resolver matched (its not-found route for a path it does not have), from the
    resolver's context, where Powertools' own validation middleware reads it too."""
    route: Route = app.context["_route"]
    return route


def refusal(
    app: APIGatewayRestResolver, status: HTTPStatus, code: str, message: str, headers: dict[str, str] | None = None
) -> Response[str]:
    request_id = app.current_event.request_context.request_id
    return errors.error_response(status, code, message, headers=headers, request_id=request_id)


def refuse_unreadable_body(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[str]:
    body, base64_encoded = app.current_event.body, bool(app.current_event.is_base64_encoded)
    if body_size(body, base64_encoded) > MAX_BODY_BYTES:
        return refusal(
            app, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "PayloadTooLarge", f"request body exceeds {MAX_BODY_BYTES} bytes"
        )
    if not is_utf8(body, base64_encoded):
        return refusal(app, HTTPStatus.BAD_REQUEST, "ValidationError", "request body is not UTF-8 JSON")
    return next_middleware(app)


def limit_tenant_rate(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[str]:
    tenant = counted_account(matched_route(app), app.request.path_parameters)
    if tenant is None:
        return next_middleware(app)
    decision = wired().tenant_limiter.admit(tenant)
    if not decision.checked:
        metrics.add_metric(name="RateLimitUnchecked", unit=MetricUnit.Count, value=1)
    if decision.allowed:
        return next_middleware(app)
    # Logged with the tenant, so a Contributor Insights rule ranks the throttled tenants.
    logger.info(THROTTLED_TENANT_MESSAGE, extra={TENANT_LOG_KEY: tenant})
    metrics.add_metric(name="TenantThrottles", unit=MetricUnit.Count, value=1)
    return refusal(
        app,
        HTTPStatus.TOO_MANY_REQUESTS,
        "TenantThrottled",
        f"account {tenant} is over its rate limit; retry after {decision.retry_after_seconds} s",
        {"Retry-After": str(decision.retry_after_seconds)},
    )


def refuse_unknown_query_parameters(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[str]:
    unknown = unknown_query_parameters(matched_route(app), app.current_event.resolved_query_string_parameters)
    if not unknown:
        return next_middleware(app)
    names = ", ".join(repr(name) for name in unknown)
    return refusal(app, HTTPStatus.BAD_REQUEST, "ValidationError", f"query: unknown parameter(s) {names}")


MIDDLEWARES: list[Callable[..., Response[Any]]] = [
    refuse_unreadable_body,
    limit_tenant_rate,
    refuse_unknown_query_parameters,
    OpenAPIRequestValidationMiddleware(),  # type: ignore[no-untyped-call]
]
