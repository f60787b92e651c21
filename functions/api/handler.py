"""API Lambda: REST proxy events in, the HTTP contract (docs/openapi.json) out.

Each route validates its input with typed models and calls one flow of functions.core.accounts.
No transaction runs here; DynamoDB failures surface as a plain 503 (functions/api/errors.py).
What a request passes before its route is functions/api/gate.py; what the document says beyond
the models, functions/api/contract.py.
"""

from __future__ import annotations

import os
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api import errors, gate
from functions.api.contract import (
    CREATE_RESOURCE,
    CREATE_RESOURCE_LINKS,
    DELETE_RESOURCE,
    ETAG_HEADER,
    GET_ACCOUNT,
    GET_ACCOUNT_LINKS,
    GET_RESOURCE,
    LIST_RESOURCES,
    PUT_ACCOUNT,
    PUT_ACCOUNT_LINKS,
    AccountId,
    IdempotencyKey,
    ResourceId,
    answers,
)
from functions.api.events import as_json_request
from functions.api.json_body import escaped_size, parse_body, render
from functions.api.models import AccountView, CreateResourceRequest, PutAccountRequest, ResourcePage, ResourceView
from functions.api.preconditions import IfMatch, parse_if_match
from functions.api.routed import caller_waiting, now, received_ms, routing, wired
from functions.core import accounts, leases
from functions.core.model import NewResource, PageBudget, Quota, Resource, Usage
from functions.shared.clients import Clients
from functions.shared.clients import default as default_clients
from functions.shared.observability import logger, metrics, tracer


def build_clients_during_init() -> None:
    """Build this execution environment's SDK client during INIT, not in its first request, as AWS
    advises ("Initialize SDK clients and database connections outside of the function handler",
    Lambda's best practices): building it costs about 100 ms, and a misconfiguration fails INIT.
    Only in Lambda (which sets AWS_LAMBDA_FUNCTION_NAME), not in a test that imports this module."""
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        default_clients().dynamodb  # noqa: B018 - built for its side effect


build_clients_during_init()

DEFAULT_PAGE_SIZE = 25
MAX_PAGE_SIZE = 100
# Lambda refuses a function response over 6 MB (6,291,456 bytes: the proxy JSON, the body escaped
# inside it), and API Gateway answers 502. A resource of a 64 KiB body can take twice that once
# escaped (a `"` is `\"` in the body, `\\\"` in the proxy JSON), so a list page also stops before
# its items take more than this; the margin covers the page's own keys, its cursor, the status
# and the headers.
PAGE_ITEMS_BUDGET = 6_000_000
# A cursor is URL-safe base64 without padding (functions/adapters/api_store.py makes them); one of
# that form the API did not return is refused 400 InvalidCursor.
CURSOR_PATTERN = r"^[A-Za-z0-9_-]+$"
ACCOUNT_PATH = "/accounts/<accountId>"
RESOURCES_PATH = f"{ACCOUNT_PATH}/resources"
RESOURCE_PATH = f"{RESOURCES_PATH}/<resourceId>"

# Every body is read by the API's JSON rules (functions/api/json_body.py) before any route runs:
# a body they refuse is a 400 that wrote nothing. Validation is the last of the gate's middlewares
# rather than enabled on the resolver, which would run it before all of them (functions/api/gate.py).
app = APIGatewayRestResolver(json_body_deserializer=parse_body)
app.use(gate.MIDDLEWARES)
errors.register(app)


def json_response(status: HTTPStatus, body: Any, headers: dict[str, str] | None = None) -> Response[str]:
    """Every answer's body, written by `render`: what the table holds cannot fail to serialize."""
    return Response(
        status_code=status.value,
        content_type=content_types.APPLICATION_JSON,
        body=render(body.model_dump()),
        headers=headers,
    )


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
@gate.exempt_from_tenant_rate  # an admin can always change a flooding tenant's limits
def put_account(
    accountId: AccountId, request: Annotated[PutAccountRequest, Body()], if_match: IfMatch = None
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
    accountId: AccountId, request: Annotated[CreateResourceRequest, Body()], idempotency_key: IdempotencyKey = None
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
    with routing(event, clients or default_clients()):
        return app.resolve(as_json_request(event), context)
