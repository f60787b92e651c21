"""API Lambda: REST proxy events in, the HTTP contract (docs/openapi.json) out.

Each route validates its input with typed models and calls one flow of functions.core.accounts.
No transaction runs here; DynamoDB failures surface as a plain 503 (functions/api/errors.py).
What a request passes before its route is functions/api/gate.py; what the document says beyond
the models, functions/api/contract.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from http import HTTPStatus
from typing import Annotated, Any, TypeVar

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api import errors, gate
from functions.api.contract import (
    CREATE_RESOURCE,
    CREATE_RESOURCE_LINKS,
    CREATE_RESOURCE_NOT_FOUND_LINKS,
    CREATE_TYPED_RESOURCE,
    CREATE_TYPED_RESOURCE_LINKS,
    CREATE_TYPED_RESOURCE_NOT_FOUND_LINKS,
    DELETE_RESOURCE,
    DELETE_TYPED_RESOURCE,
    ETAG_HEADER,
    GET_ACCOUNT,
    GET_ACCOUNT_LINKS,
    GET_RESOURCE,
    GET_TYPE,
    GET_TYPE_LINKS,
    GET_TYPED_RESOURCE,
    LIST_RESOURCES,
    LIST_TYPED_RESOURCES,
    LIST_TYPES,
    PUT_ACCOUNT,
    PUT_ACCOUNT_LINKS,
    PUT_TYPE,
    PUT_TYPE_LINKS,
    AccountId,
    IdempotencyKey,
    PutIdempotencyKey,
    ResourceId,
    ResourceType,
    answers,
)
from functions.api.events import as_json_request
from functions.api.json_body import escaped_size, parse_body, render
from functions.api.models import (
    AccountView,
    CreateResourceRequest,
    PutAccountRequest,
    PutTypeRequest,
    QuotaAnswer,
    ResourcePage,
    ResourceView,
    TypedResourcePage,
    TypedResourceView,
    TypeList,
    TypeView,
)
from functions.api.preconditions import IfMatch, parse_if_match
from functions.api.routed import caller, caller_waiting, now, received_ms, routing, wired
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
PageSize = Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)]
Cursor = Annotated[
    str | None,
    Query(
        max_length=1024,
        pattern=CURSOR_PATTERN,
        description="Opaque: the nextCursor of the previous page, as returned (URL-safe base64, no padding).",
    ),
]
View = TypeVar("View", bound=ResourceView)
ACCOUNT_PATH = "/accounts/<accountId>"
RESOURCES_PATH = f"{ACCOUNT_PATH}/resources"
RESOURCE_PATH = f"{RESOURCES_PATH}/<resourceId>"
TYPES_PATH = f"{ACCOUNT_PATH}/types"
TYPE_PATH = f"{TYPES_PATH}/<resourceType>"
TYPED_RESOURCES_PATH = f"{TYPE_PATH}/resources"
TYPED_RESOURCE_PATH = f"{TYPED_RESOURCES_PATH}/<resourceId>"

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
        body=render(body.answer() if isinstance(body, QuotaAnswer) else body.model_dump()),
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
                "and answers the account as that later PUT left it; so does a retry (the same Idempotency-Key) "
                "of one that landed",
                AccountView,
            )
        },
        412,
        413,
        422,
        headers=ETAG_HEADER,
        links=PUT_ACCOUNT_LINKS,
    ),
)
@gate.exempt_from_tenant_rate  # an admin can always change a flooding tenant's limits
def put_account(
    accountId: AccountId,
    request: Annotated[PutAccountRequest, Body()],
    if_match: IfMatch = None,
    idempotency_key: PutIdempotencyKey = None,
) -> Response[str]:
    versions, must_exist = parse_if_match(if_match)
    change = accounts.LimitChange(
        limit=request.limit,
        rate=request.rateLimit.as_rate() if request.rateLimit else None,
        received_ms=received_ms(),
        token=leases.new_token(),
        if_match=versions,
        must_exist=must_exist,
        changed_by=caller(),
        thresholds=own_thresholds(request.thresholds),
        key=put_key(idempotency_key),
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
    read = accounts.get_account(wired().api_store, accountId)
    return account_response(read.default, read.types)


def put_key(idempotency_key: str | None) -> accounts.PutKey | None:
    """A PUT's key, remembered as long as a create's (the tombstone retention)."""
    if idempotency_key is None:
        return None
    return accounts.PutKey(idempotency_key, int(wired().settings.tombstone_retention.total_seconds()))


def own_thresholds(given: list[int] | None) -> tuple[int, ...] | None:
    """A PUT's thresholds (validated, ascending), or None: the quota keeps what it has."""
    return None if given is None else tuple(given)


def account_response(usage: Usage, types: Sequence[Usage] = ()) -> Response[str]:
    view = AccountView.of(usage, wired().settings.tenant_rate, types)
    return json_response(HTTPStatus.OK, view, etag(usage))


def etag(usage: Usage) -> dict[str, str]:
    return {"ETag": f'"{usage.limit_version}"'}


@app.put(
    TYPE_PATH,
    operation_id=PUT_TYPE,
    summary="Set the limit of one of an account's resource types, creating the account if it has none (admin only)",
    responses=answers(
        {
            200: (
                "The type, with its new limit. Its first PUT adds it to the account (created with a limit of 0 "
                "for the routes without a type if it did not exist). A PUT overtaken by one received after it "
                "changes nothing and answers the type as that later PUT left it; so does a retry (the same "
                "Idempotency-Key) of one that landed",
                TypeView,
            )
        },
        409,
        412,
        413,
        422,
        headers=ETAG_HEADER,
        links=PUT_TYPE_LINKS,
    ),
)
@gate.exempt_from_tenant_rate  # as the account's PUT
def put_type(
    accountId: AccountId,
    resourceType: ResourceType,
    request: Annotated[PutTypeRequest, Body()],
    if_match: IfMatch = None,
    idempotency_key: PutIdempotencyKey = None,
) -> Response[str]:
    versions, must_exist = parse_if_match(if_match)
    change = accounts.LimitChange(
        limit=request.limit,
        received_ms=received_ms(),
        token=leases.new_token(),
        if_match=versions,
        must_exist=must_exist,
        changed_by=caller(),
        thresholds=own_thresholds(request.thresholds),
        key=put_key(idempotency_key),
    )
    usage = accounts.put_limit(wired().api_store, Quota(accountId, resourceType), change, now, caller_waiting)
    return json_response(HTTPStatus.OK, TypeView.of(usage), etag(usage))


@app.get(
    TYPE_PATH,
    operation_id=GET_TYPE,
    summary="Read one resource type's limit and both counters",
    responses=answers(
        {200: ("The type; ETag names its limit's version, for If-Match", TypeView)},
        404,
        headers=ETAG_HEADER,
        links=GET_TYPE_LINKS,
    ),
)
def get_type(accountId: AccountId, resourceType: ResourceType) -> Response[str]:
    usage = accounts.get_usage(wired().api_store, Quota(accountId, resourceType))
    return json_response(HTTPStatus.OK, TypeView.of(usage), etag(usage))


@app.get(
    TYPES_PATH,
    operation_id=LIST_TYPES,
    summary="Read every resource type of an account, the default type included",
    responses=answers({200: ("Every type's limit and counters", TypeList)}, 404),
)
def list_types(accountId: AccountId) -> Response[str]:
    read = accounts.get_account(wired().api_store, accountId)
    return json_response(HTTPStatus.OK, TypeList(items=[TypeView.of(usage) for usage in read.every_type]))


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
        error_links={404: CREATE_RESOURCE_NOT_FOUND_LINKS},
    ),
)
def create_resource(
    accountId: AccountId, request: Annotated[CreateResourceRequest, Body()], idempotency_key: IdempotencyKey = None
) -> Response[str]:
    return create(Quota(accountId), request, idempotency_key, ResourceView, f"/accounts/{accountId}/resources")


@app.post(
    TYPED_RESOURCES_PATH,
    operation_id=CREATE_TYPED_RESOURCE,
    summary="Create a resource of a type if the account is below that type's limit",
    responses=answers(
        {
            201: ("Created; Location names it", TypedResourceView),
            200: (
                "A replay of an earlier call with the same Idempotency-Key on this type: the resource it created",
                TypedResourceView,
            ),
        },
        404,
        409,
        413,
        422,
        links=CREATE_TYPED_RESOURCE_LINKS,
        error_links={404: CREATE_TYPED_RESOURCE_NOT_FOUND_LINKS},
    ),
)
def create_typed_resource(
    accountId: AccountId,
    resourceType: ResourceType,
    request: Annotated[CreateResourceRequest, Body()],
    idempotency_key: IdempotencyKey = None,
) -> Response[str]:
    url = f"/accounts/{accountId}/types/{resourceType}/resources"
    return create(Quota(accountId, resourceType), request, idempotency_key, TypedResourceView, url)


def create(
    quota: Quota,
    request: CreateResourceRequest,
    idempotency_key: str | None,
    view: type[ResourceView],
    resources_url: str,
) -> Response[str]:
    created = accounts.create_resource(
        wired().api_store,
        quota,
        NewResource(name=request.name, attributes=request.attributes),
        idempotency_key,
        now,
        in_time=caller_waiting,
        directory=wired().shard_directory,
    )
    if created.replayed:
        metrics.add_metric(name="IdempotentReplays", unit=MetricUnit.Count, value=1)
        return json_response(HTTPStatus.OK, view.of(created.resource))
    metrics.add_metric(name="ResourcesCreated", unit=MetricUnit.Count, value=1)
    location = f"{resources_url}/{created.resource.resource_id}"
    return json_response(HTTPStatus.CREATED, view.of(created.resource), {"Location": location})


# The order of a list page (docs/api.md, "Pages, and their order"): the sort key's, RESOURCE#<id>.
LIST_ORDER = (
    "Live resources in resource-id order, not creation order (an id is a random UUID, or one derived from the "
    "create's Idempotency-Key): one created later may come on an earlier page. Pass nextCursor on until it is "
    "null and every live resource comes exactly once."
)


@app.get(
    RESOURCES_PATH,
    operation_id=LIST_RESOURCES,
    summary="List live resources, a page at a time by cursor",
    description=LIST_ORDER,
    responses=answers({200: ("A page of resources, and the cursor of the next", ResourcePage)}, 404),
)
def list_resources(accountId: AccountId, limit: PageSize = DEFAULT_PAGE_SIZE, cursor: Cursor = None) -> Response[str]:
    items, next_cursor = list_page(Quota(accountId), limit, cursor, ResourceView)
    return json_response(HTTPStatus.OK, ResourcePage(items=items, nextCursor=next_cursor))


@app.get(
    TYPED_RESOURCES_PATH,
    operation_id=LIST_TYPED_RESOURCES,
    summary="List a type's live resources, a page at a time by cursor",
    description=LIST_ORDER,
    responses=answers({200: ("A page of the type's resources, and the cursor of the next", TypedResourcePage)}, 404),
)
def list_typed_resources(
    accountId: AccountId, resourceType: ResourceType, limit: PageSize = DEFAULT_PAGE_SIZE, cursor: Cursor = None
) -> Response[str]:
    items, next_cursor = list_page(Quota(accountId, resourceType), limit, cursor, TypedResourceView)
    return json_response(HTTPStatus.OK, TypedResourcePage(items=items, nextCursor=next_cursor))


def list_page(quota: Quota, limit: int, cursor: str | None, view: type[View]) -> tuple[list[View], str | None]:
    """A page of the quota's resources as `view`s, and the cursor of the next page."""

    def listed_size(resource: Resource) -> int:
        """The bytes one item adds to a page's proxy response: its JSON escaped, and a comma."""
        return escaped_size(render(view.of(resource).model_dump())) + 1

    budget = PageBudget(room=PAGE_ITEMS_BUDGET, size_of=listed_size)
    page = accounts.list_resources(wired().api_store, quota, limit, cursor, budget)
    return [view.of(item) for item in page.items], page.next_cursor


@app.get(
    RESOURCE_PATH,
    operation_id=GET_RESOURCE,
    summary="Read one live resource",
    responses=answers({200: ("The resource", ResourceView)}, 404),
)
def get_resource(accountId: AccountId, resourceId: ResourceId) -> Response[str]:
    resource = accounts.get_resource(wired().api_store, Quota(accountId), resourceId)
    return json_response(HTTPStatus.OK, ResourceView.of(resource))


@app.get(
    TYPED_RESOURCE_PATH,
    operation_id=GET_TYPED_RESOURCE,
    summary="Read one live resource of a type",
    responses=answers({200: ("The resource", TypedResourceView)}, 404),
)
def get_typed_resource(accountId: AccountId, resourceType: ResourceType, resourceId: ResourceId) -> Response[str]:
    resource = accounts.get_resource(wired().api_store, Quota(accountId, resourceType), resourceId)
    return json_response(HTTPStatus.OK, TypedResourceView.of(resource))


@app.delete(
    RESOURCE_PATH,
    operation_id=DELETE_RESOURCE,
    summary="Delete a resource",
    responses=answers({204: ("Deleted; its slot is free", None)}, 404),
)
def delete_resource(accountId: AccountId, resourceId: ResourceId) -> Response[str]:
    return delete(Quota(accountId), resourceId)


@app.delete(
    TYPED_RESOURCE_PATH,
    operation_id=DELETE_TYPED_RESOURCE,
    summary="Delete a resource of a type",
    responses=answers({204: ("Deleted; its slot in the type's limit is free", None)}, 404),
)
def delete_typed_resource(accountId: AccountId, resourceType: ResourceType, resourceId: ResourceId) -> Response[str]:
    return delete(Quota(accountId, resourceType), resourceId)


def delete(quota: Quota, resource_id: str) -> Response[str]:
    accounts.delete_resource(
        wired().api_store, quota, resource_id, now, in_time=caller_waiting, directory=wired().shard_directory
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


@app.route(TYPES_PATH, method=other_methods("GET"), include_in_schema=False)
def types_method_not_allowed(accountId: str) -> Response[str]:
    return method_not_allowed("GET")


@app.route(TYPE_PATH, method=other_methods("GET", "PUT"), include_in_schema=False)
def type_method_not_allowed(accountId: str, resourceType: str) -> Response[str]:
    return method_not_allowed("GET", "PUT")


@app.route(TYPED_RESOURCES_PATH, method=other_methods("GET", "POST"), include_in_schema=False)
def typed_resources_method_not_allowed(accountId: str, resourceType: str) -> Response[str]:
    return method_not_allowed("GET", "POST")


@app.route(TYPED_RESOURCE_PATH, method=other_methods("DELETE", "GET"), include_in_schema=False)
def typed_resource_method_not_allowed(accountId: str, resourceType: str, resourceId: str) -> Response[str]:
    return method_not_allowed("DELETE", "GET")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
# Responses and errors carry tenants' data (docs/security.md): never in the trace's metadata.
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext, clients: Clients | None = None) -> dict[str, Any]:
    with routing(event, clients or default_clients()):
        return app.resolve(as_json_request(event), context)
