"""API Lambda: REST proxy events in, the HTTP contract (docs/openapi.json) out.

Each route validates its input with typed models and calls one flow of functions.core.accounts.
No transaction runs here; DynamoDB failures surface as a plain 503 (functions/api/errors.py).
"""

from __future__ import annotations

import base64
import os
import re
from contextvars import ContextVar
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse, OpenAPIResponseHeader
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api import errors
from functions.api.json_body import escaped_size, parse_body, render
from functions.api.models import (
    AccountView,
    CreateResourceRequest,
    ErrorResponse,
    PutAccountRequest,
    ResourcePage,
    ResourceView,
)
from functions.core import accounts, leases
from functions.core.model import ID_PATTERN, IDEMPOTENCY_KEY_PATTERN, NewResource, PageBudget, Quota, Resource, Usage
from functions.core.rate_limits import TENANT_LOG_KEY, THROTTLED_TENANT_MESSAGE
from functions.shared.clients import Clients
from functions.shared.clients import default as default_clients
from functions.shared.observability import logger, metrics, tracer

MAX_BODY_BYTES = 64 * 1024
# API Gateway answers 504 after its integration timeout (29 s for a REST API) and never sees the
# function's answer after that. An invocation that starts its writes later than this only changes
# what a caller who has already given up will never read: it writes nothing instead.
INTEGRATION_TIMEOUT_MS = 29_000
DEFAULT_PAGE_SIZE = 25
MAX_PAGE_SIZE = 100
# Lambda refuses a function response over 6 MB (6,291,456 bytes: the proxy JSON, the body escaped
# inside it), and API Gateway answers 502. A resource of a 64 KiB body can take twice that once
# escaped (a `"` is `\"` in the body, `\\\"` in the proxy JSON), so a list page also stops before
# its items take more than this; the margin covers the page's own keys, its cursor, the status
# and the headers.
PAGE_ITEMS_BUDGET = 6_000_000

ACCOUNT_ID = re.compile(ID_PATTERN)
# If-Match: * or a list of entity tags (RFC 9110, 13.1.1); only a strong tag of a version can match.
IF_MATCH_PATTERN = r'^\s*(\*|(W/)?"[\x21\x23-\x7e]*"(\s*,\s*(W/)?"[\x21\x23-\x7e]*")*)\s*$'
# A cursor is URL-safe base64 without padding (functions/adapters/api_store.py makes them); one of
# that form the API did not return is refused 400 InvalidCursor.
CURSOR_PATTERN = r"^[A-Za-z0-9_-]+$"
AccountId = Annotated[str, Path(pattern=ID_PATTERN, description="Account id: letters, digits, - and _.")]
ResourceId = Annotated[str, Path(pattern=ID_PATTERN)]
ACCOUNT_PATH = "/accounts/<accountId>"
RESOURCES_PATH = f"{ACCOUNT_PATH}/resources"
RESOURCE_PATH = f"{RESOURCES_PATH}/<resourceId>"

# Every body is read by the API's JSON rules (functions/api/json_body.py) before any route runs:
# a body they refuse is a 400 that wrote nothing.
app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=parse_body)
errors.register(app)


def now() -> str:
    return leases.iso_timestamp(wired().clock.now())


def caller_waiting() -> bool:
    """False once API Gateway has answered this request's caller with a 504."""
    started = (app.current_event.get("requestContext") or {}).get("requestTimeEpoch")
    return not isinstance(started, int) or wired().clock.epoch_ms() - started < INTEGRATION_TIMEOUT_MS


def json_response(status: HTTPStatus, body: Any, headers: dict[str, str] | None = None) -> Response[str]:
    """Every answer's body, written by `render`: what the table holds cannot fail to serialize."""
    return Response(
        status_code=status.value,
        content_type=content_types.APPLICATION_JSON,
        body=render(body.model_dump()),
        headers=headers,
    )


# What any route may answer besides its own results: its errors in the envelope, and what API
# Gateway answers before the function runs (docs/security.md), in the same envelope.
ERRORS = {
    400: "ValidationError: a path, query, header or body the contract does not allow; InvalidCursor: a cursor "
    "this API did not return (a cursor is opaque); nothing was written",
    401: "API Gateway, with the JWT authorizer (-c authorizer=jwt): Unauthorized (no bearer token, or one that is "
    "not valid)",
    403: "API Gateway: MissingAuthenticationToken (unsigned, or a method API Gateway does not take, such as TRACE), "
    "InvalidSignature, ExpiredToken, AccessDenied (another tenant's path, or a tenant setting a limit)",
    404: "AccountNotFound, ResourceNotFound",
    409: "LimitExceeded (the account is at its limit), IdempotencyKeyReused (the key's resource was deleted)",
    412: "PreconditionFailed: If-Match names another version of the account (or the account does not exist)",
    413: "PayloadTooLarge: a body over 64 KiB (the function), or over 10 MB (API Gateway)",
    422: "IdempotencyKeyMismatch: the key was sent before with another body",
    429: "TenantThrottled: the account is over its rate limit; API Gateway: Throttled (the stage's limit). "
    "Both with Retry-After",
    500: "API Gateway: InternalError (a failure of its own, or of the JWT authorizer)",
    502: "API Gateway: InternalError (the function failed; a write may have landed: retry idempotently)",
    503: "ServiceUnavailable, with Retry-After: DynamoDB failed after retries (the function), or the function's "
    "concurrency was used up (API Gateway); retry after Retry-After",
    504: "API Gateway: IntegrationTimeout (no answer within 29 s; a write may have landed: retry idempotently)",
}
ALWAYS = (400, 401, 403, 429, 500, 502, 503, 504)


ETAG_HEADER: dict[str, OpenAPIResponseHeader] = {
    "ETag": {
        "description": 'The version of the account\'s limit, as a strong entity tag ("3").',
        "schema": {"type": "string"},
    }
}


# The operations' ids, which the links between them name.
PUT_ACCOUNT, GET_ACCOUNT = "putAccount", "getAccount"
LIST_RESOURCES, CREATE_RESOURCE = "listResources", "createResource"
GET_RESOURCE, DELETE_RESOURCE = "getResource", "deleteResource"


def link(operation_id: str, **parameters: str) -> dict[str, Any]:
    """An OpenAPI link: where a client goes next with what this answer (or its request) named."""
    return {"operationId": operation_id, "parameters": parameters}


ACCOUNT_OF_REQUEST = "$request.path.accountId"
# What a client does next: an account just put can be read, listed and created in; one just read
# can be changed, on the condition that it is still as read; a resource just created (or
# replayed) can be read and deleted, and its account read again.
ACCOUNT_READS = {
    operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST) for operation_id in (GET_ACCOUNT, LIST_RESOURCES)
}
PUT_ACCOUNT_LINKS = {**ACCOUNT_READS, CREATE_RESOURCE: link(CREATE_RESOURCE, accountId=ACCOUNT_OF_REQUEST)}
GET_ACCOUNT_LINKS = {
    PUT_ACCOUNT: link(PUT_ACCOUNT, accountId=ACCOUNT_OF_REQUEST, **{"header.If-Match": "$response.header.ETag"})
}
CREATE_RESOURCE_LINKS = {
    **ACCOUNT_READS,
    **{
        operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST, resourceId="$response.body#/resourceId")
        for operation_id in (GET_RESOURCE, DELETE_RESOURCE)
    },
}


def answers(
    own: dict[int, tuple[str, type | None]],
    *errors: int,
    headers: dict[str, OpenAPIResponseHeader] | None = None,
    links: dict[str, Any] | None = None,
) -> dict[int, OpenAPIResponse]:
    """The route's responses for the OpenAPI document: its own answers (with `headers` and `links`),
    then its errors."""
    documented: dict[int, OpenAPIResponse] = {}
    for status, (description, model) in own.items():
        documented[status] = {"description": description}
        if headers:
            documented[status]["headers"] = headers
        if links:
            documented[status]["links"] = links
        if model is not None:
            documented[status]["content"] = {content_types.APPLICATION_JSON: {"model": model}}
    for status in sorted({*errors, *ALWAYS}):
        documented[status] = {
            "description": ERRORS[status],
            "content": {content_types.APPLICATION_JSON: {"model": ErrorResponse}},
        }
    return documented


@app.put(
    ACCOUNT_PATH,
    operation_id=PUT_ACCOUNT,
    summary="Create an account or change its limit (admin only)",
    responses=answers(
        {
            200: (
                "The account, with its new limit. A PUT overtaken by one received after it changes nothing "
                "and answers the account as that later PUT left it",
                AccountView,
            )
        },
        412,
        413,
        headers=ETAG_HEADER,
        links=PUT_ACCOUNT_LINKS,
    ),
)
def put_account(
    accountId: AccountId,
    request: Annotated[PutAccountRequest, Body()],
    if_match: Annotated[
        str | None,
        Header(
            alias="If-Match",
            max_length=1024,
            pattern=IF_MATCH_PATTERN,
            description='Change the account only if its ETag is one of these ("1", "2") or, with *, if it exists.',
        ),
    ] = None,
) -> Response[str]:
    versions, must_exist = parse_if_match(if_match)
    change = accounts.LimitChange(
        limit=request.limit,
        rate=request.rateLimit.as_rate() if request.rateLimit else None,
        received_ms=received_ms(),
        token=leases.new_token(),
        if_match=versions,
        must_exist=must_exist,
    )
    usage = accounts.put_account(wired().api_store, Quota(accountId), change, now, caller_waiting)
    wired().tenant_limiter.learn(accountId, usage.rate)
    return account_response(usage)


@app.get(
    ACCOUNT_PATH,
    operation_id=GET_ACCOUNT,
    summary="Read an account's limit and both counters",
    responses=answers(
        {200: ("The account; ETag names its limit's version, for If-Match", AccountView)},
        404,
        headers=ETAG_HEADER,
        links=GET_ACCOUNT_LINKS,
    ),
)
def get_account(accountId: AccountId) -> Response[str]:
    return account_response(accounts.get_usage(wired().api_store, Quota(accountId)))


def account_response(usage: Usage) -> Response[str]:
    view = AccountView.of(usage, wired().settings.tenant_rate)
    return json_response(HTTPStatus.OK, view, {"ETag": f'"{usage.limit_version}"'})


ENTITY_TAG = re.compile(r'\s*(W/)?"([\x21\x23-\x7e]*)"\s*')


def parse_if_match(header: str | None) -> tuple[frozenset[int] | None, bool]:
    """If-Match as (the versions it allows, or None for any; whether the account must exist).
    Weak tags (W/"1") never match: If-Match compares strongly (RFC 9110, 13.1.1)."""
    if header is None:
        return None, False
    if header.strip() == "*":
        return None, True
    versions: set[int] = set()
    for tag in header.split(","):
        matched = ENTITY_TAG.fullmatch(tag)
        if matched is None:
            raise RequestValidationError(
                [{"loc": ("header", "If-Match"), "msg": "not a list of entity tags", "type": "value_error"}]
            )
        weak, opaque = matched.groups()
        if not weak and opaque.isdigit() and len(opaque) <= 18:  # any other tag matches no version
            versions.add(int(opaque))
    return frozenset(versions), False


def received_ms() -> int:
    """When API Gateway received the request (epoch ms): the order of PUTs that counts."""
    received = (app.current_event.get("requestContext") or {}).get("requestTimeEpoch")
    return received if isinstance(received, int) else wired().clock.epoch_ms()


@app.post(
    RESOURCES_PATH,
    operation_id=CREATE_RESOURCE,
    summary="Create a resource if the account is below its limit",
    responses=answers(
        {
            201: ("Created; Location names it", ResourceView),
            200: ("A replay of an earlier call with the same Idempotency-Key: the resource it created", ResourceView),
        },
        404,
        409,
        413,
        422,
        links=CREATE_RESOURCE_LINKS,
    ),
)
def create_resource(
    accountId: AccountId,
    request: Annotated[CreateResourceRequest, Body()],
    idempotency_key: Annotated[
        str | None,
        Header(pattern=IDEMPOTENCY_KEY_PATTERN, description="Retries with the same key never count twice."),
    ] = None,
) -> Response[str]:
    created = accounts.create_resource(
        wired().api_store,
        Quota(accountId),
        NewResource(name=request.name, attributes=request.attributes),
        idempotency_key,
        now,
        in_time=caller_waiting,
        directory=wired().shard_directory,
    )
    if created.replayed:
        metrics.add_metric(name="IdempotentReplays", unit=MetricUnit.Count, value=1)
        return json_response(HTTPStatus.OK, ResourceView.of(created.resource))
    metrics.add_metric(name="ResourcesCreated", unit=MetricUnit.Count, value=1)
    location = f"/accounts/{accountId}/resources/{created.resource.resource_id}"
    return json_response(HTTPStatus.CREATED, ResourceView.of(created.resource), {"Location": location})


@app.get(
    RESOURCES_PATH,
    operation_id=LIST_RESOURCES,
    summary="List live resources, newest pages by cursor",
    responses=answers({200: ("A page of resources, and the cursor of the next", ResourcePage)}, 404),
)
def list_resources(
    accountId: AccountId,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = DEFAULT_PAGE_SIZE,
    cursor: Annotated[
        str | None,
        Query(
            max_length=1024,
            pattern=CURSOR_PATTERN,
            description="Opaque: the nextCursor of the previous page, as returned (URL-safe base64, no padding).",
        ),
    ] = None,
) -> Response[str]:
    budget = PageBudget(room=PAGE_ITEMS_BUDGET, size_of=listed_size)
    page = accounts.list_resources(wired().api_store, Quota(accountId), limit, cursor, budget)
    items = [ResourceView.of(item) for item in page.items]
    return json_response(HTTPStatus.OK, ResourcePage(items=items, nextCursor=page.next_cursor))


def listed_size(resource: Resource) -> int:
    """The bytes one item adds to a page's proxy response: its JSON escaped, and a comma."""
    return escaped_size(render(ResourceView.of(resource).model_dump())) + 1


@app.get(
    RESOURCE_PATH,
    operation_id=GET_RESOURCE,
    summary="Read one live resource",
    responses=answers({200: ("The resource", ResourceView)}, 404),
)
def get_resource(accountId: AccountId, resourceId: ResourceId) -> Response[str]:
    resource = accounts.get_resource(wired().api_store, Quota(accountId), resourceId)
    return json_response(HTTPStatus.OK, ResourceView.of(resource))


@app.delete(
    RESOURCE_PATH,
    operation_id=DELETE_RESOURCE,
    summary="Delete a resource",
    responses=answers({204: ("Deleted; its slot is free", None)}, 404),
)
def delete_resource(accountId: AccountId, resourceId: ResourceId) -> Response[str]:
    accounts.delete_resource(
        wired().api_store, Quota(accountId), resourceId, now, in_time=caller_waiting, directory=wired().shard_directory
    )
    metrics.add_metric(name="ResourcesDeleted", unit=MetricUnit.Count, value=1)
    return Response(status_code=HTTPStatus.NO_CONTENT.value, body="")


# A path the API has, with a method it does not take: 405 and the methods it does (RFC 9110,
# 15.5.6). API Gateway's proxy resource (ANY) passes the function every method API Gateway takes;
# a path the API does not have is 404 RouteNotFound (functions/api/errors.py).
GATEWAY_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def other_methods(*taken: str) -> list[str]:
    return [method for method in GATEWAY_METHODS if method not in taken]


def method_not_allowed(*taken: str) -> Response[str]:
    event = app.current_event
    return errors.error_response(
        HTTPStatus.METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        f"{event.path} takes {', '.join(taken)}, not {event.http_method}",
        headers={"Allow": ", ".join(taken)},
        request_id=event.request_context.request_id,
    )


@app.route(ACCOUNT_PATH, method=other_methods("GET", "PUT"), include_in_schema=False)
def account_method_not_allowed(accountId: str) -> Response[str]:
    return method_not_allowed("GET", "PUT")


@app.route(RESOURCES_PATH, method=other_methods("GET", "POST"), include_in_schema=False)
def resources_method_not_allowed(accountId: str) -> Response[str]:
    return method_not_allowed("GET", "POST")


@app.route(RESOURCE_PATH, method=other_methods("DELETE", "GET"), include_in_schema=False)
def resource_method_not_allowed(accountId: str, resourceId: str) -> Response[str]:
    return method_not_allowed("DELETE", "GET")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
# Responses and errors carry tenants' data (docs/security.md): never in the trace's metadata.
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext, clients: Clients | None = None) -> dict[str, Any]:
    wiring = clients or default_clients()
    # Checked before routing: request validation would otherwise parse a huge body first.
    if body_size(event) > MAX_BODY_BYTES:
        return plain_error(
            event,
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            "PayloadTooLarge",
            f"request body exceeds {MAX_BODY_BYTES} bytes",
        )
    # API Gateway passes a body that is not UTF-8 base64-encoded; the resolver would fail to decode it.
    if not utf8_body(event):
        return plain_error(event, HTTPStatus.BAD_REQUEST, "ValidationError", "request body is not UTF-8 JSON")
    tenant = rate_limited_account(event)
    if tenant is not None:
        decision = wiring.tenant_limiter.admit(tenant)
        if not decision.checked:
            metrics.add_metric(name="RateLimitUnchecked", unit=MetricUnit.Count, value=1)
        if not decision.allowed:
            # Logged with the tenant, so a Contributor Insights rule ranks the throttled tenants.
            logger.info(THROTTLED_TENANT_MESSAGE, extra={TENANT_LOG_KEY: tenant})
            metrics.add_metric(name="TenantThrottles", unit=MetricUnit.Count, value=1)
            return plain_error(
                event,
                HTTPStatus.TOO_MANY_REQUESTS,
                "TenantThrottled",
                f"account {tenant} is over its rate limit; retry after {decision.retry_after_seconds} s",
                {"Retry-After": str(decision.retry_after_seconds)},
            )
    unknown = sorted(set(query_parameters(event)) - allowed_query_parameters(event))
    if unknown:
        # A typo (`?limt=5`) gets a clear 400 rather than a silent default.
        names = ", ".join(repr(name) for name in unknown)
        return plain_error(event, HTTPStatus.BAD_REQUEST, "ValidationError", f"query: unknown parameter(s) {names}")
    routed = _routed_clients.set(wiring)
    try:
        return app.resolve(as_json_request(event), context)
    finally:
        _routed_clients.reset(routed)


# The clients of the request being routed. Not in the resolver's context, which every resolve
# clears as it ends: a test may call the handler from inside a request (a fault hook), and the
# outer request's flow, which reads its clock as it goes, must still find its own clients after.
_routed_clients: ContextVar[Clients] = ContextVar("routed_clients")


def wired() -> Clients:
    """The clients of the request being routed (handler() sets them)."""
    return _routed_clients.get()


def query_parameters(event: dict[str, Any]) -> dict[str, Any]:
    return dict(event.get("multiValueQueryStringParameters") or event.get("queryStringParameters") or {})


def allowed_query_parameters(event: dict[str, Any]) -> set[str]:
    """The query parameters the contract allows: only the list of resources takes any."""
    parts = str(event.get("path") or "").strip("/").split("/")
    listing = (
        event.get("httpMethod") == "GET" and len(parts) == 3 and parts[0] == "accounts" and parts[2] == "resources"
    )
    return {"limit", "cursor"} if listing else set()


def rate_limited_account(event: dict[str, Any]) -> str | None:
    """The account whose rate a request counts against: every request on an account's paths but an
    admin's PUT of the account itself, so an admin can always change a flooding tenant's limits."""
    parts = str(event.get("path") or "").strip("/").split("/")
    if len(parts) < 2 or parts[0] != "accounts" or not ACCOUNT_ID.fullmatch(parts[1]):
        return None
    if len(parts) == 2 and event.get("httpMethod") == "PUT":
        return None
    return parts[1]


def plain_error(
    event: dict[str, Any], status: HTTPStatus, code: str, message: str, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """An error answered before routing, in the API's error envelope."""
    request_id = (event.get("requestContext") or {}).get("requestId")
    response = errors.error_response(status, code, message, request_id=request_id)
    return {
        "statusCode": response.status_code,
        "headers": {"Content-Type": content_types.APPLICATION_JSON, **(headers or {})},
        "body": response.body,
        "isBase64Encoded": False,
    }


def utf8_body(event: dict[str, Any]) -> bool:
    if not event.get("isBase64Encoded") or not event.get("body"):
        return True
    try:
        base64.b64decode(event["body"]).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def as_json_request(event: dict[str, Any]) -> dict[str, Any]:
    """The API speaks JSON only: read every body as JSON, whatever Content-Type the client sent
    (curl's `-d` says form-urlencoded, which the resolver would otherwise parse as a form)."""
    if not event.get("body"):
        return event
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    headers["Content-Type"] = content_types.APPLICATION_JSON
    multi["Content-Type"] = [content_types.APPLICATION_JSON]
    return {**event, "headers": headers, "multiValueHeaders": multi}


def body_size(event: dict[str, Any]) -> int:
    body = event.get("body") or ""
    size = len(body.encode("utf-8", "surrogatepass"))  # a lone surrogate is refused later, as a 400
    return size * 3 // 4 if event.get("isBase64Encoded") else size


if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
    # In an execution environment (not a test importing this module), the SDK client is built
    # during INIT rather than by the environment's first request, as AWS advises ("Initialize SDK
    # clients and database connections outside of the function handler", Lambda's best practices):
    # it cost each environment's first request about 100 ms. A misconfiguration fails INIT.
    default_clients().dynamodb  # noqa: B018 - built for its side effect
