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
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api import errors, gate, router
from functions.api.contract import (
    CREATE_RESOURCE_OPERATION,
    DEFAULT_PAGE_SIZE,
    DELETE_RESOURCE_OPERATION,
    GET_ACCOUNT_OPERATION,
    GET_RESOURCE_OPERATION,
    GET_TYPE_OPERATION,
    LIST_RESOURCES_OPERATION,
    LIST_TYPES_OPERATION,
    PUT_ACCOUNT_OPERATION,
    PUT_TYPE_OPERATION,
    AccountId,
    Cursor,
    IdempotencyKey,
    PageSize,
    PutIdempotencyKey,
    ResourceId,
    ResourceType,
)
from functions.api.events import as_json_request
from functions.api.json_body import escaped_size, parse_body, render
from functions.api.models import (
    AccountView,
    CreateResourceRequest,
    PutAccountRequest,
    PutTypeRequest,
    QuotaAnswer,
    ResourceView,
    TypeList,
    TypeView,
)
from functions.api.preconditions import IfMatch, parse_if_match
from functions.api.routed import caller, caller_waiting, now, received_ms, routing, wired
from functions.api.router import ACCOUNT_PATH, RESOURCE_PATH, RESOURCES_PATH, TYPE_PATH, TYPES_PATH, Family
from functions.core import accounts, leases
from functions.core.model import NewResource, PageBudget, Quota, Resource, Usage
from functions.core.rate_limits import TenantRate
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

# Lambda refuses a function response over 6 MB (6,291,456 bytes: the proxy JSON, the body escaped
# inside it), and API Gateway answers 502. A resource of a 64 KiB body can take twice that once
# escaped (a `"` is `\"` in the body, `\\\"` in the proxy JSON), so a list page also stops before
# its items take more than this; the margin covers the page's own keys, its cursor, the status
# and the headers.
PAGE_ITEMS_BUDGET = 6_000_000
View = TypeVar("View", bound=ResourceView)
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


@gate.exempt_from_tenant_rate  # an admin can always change a flooding tenant's limits
def put_account(
    accountId: AccountId,
    request: Annotated[PutAccountRequest, Body()],
    if_match: IfMatch = None,
    idempotency_key: PutIdempotencyKey = None,
) -> Response[str]:
    rate = request.rateLimit.as_rate() if request.rateLimit else None
    change = limit_change(request.limit, request.thresholds, if_match, idempotency_key, rate)
    usage = accounts.put_account(wired().api_store, Quota(accountId), change, now, caller_waiting)
    wired().tenant_limiter.learn(accountId, usage.rate)
    return account_response(usage)


def get_account(accountId: AccountId) -> Response[str]:
    read = accounts.get_account(wired().api_store, accountId)
    return account_response(read.default, read.types)


def limit_change(
    limit: int,
    thresholds: list[int] | None,
    if_match: str | None,
    idempotency_key: str | None,
    rate: TenantRate | None = None,
) -> accounts.LimitChange:
    """A PUT's change of a limit, received now: its thresholds ascending, or None (the quota keeps
    what it has); its key remembered as long as a create's (the tombstone retention)."""
    versions, must_exist = parse_if_match(if_match)
    key = None
    if idempotency_key is not None:
        key = accounts.PutKey(idempotency_key, int(wired().settings.tombstone_retention.total_seconds()))
    return accounts.LimitChange(
        limit=limit,
        received_ms=received_ms(),
        token=leases.new_token(),
        rate=rate,
        if_match=versions,
        must_exist=must_exist,
        changed_by=caller(),
        thresholds=None if thresholds is None else tuple(thresholds),
        key=key,
    )


def account_response(usage: Usage, types: Sequence[Usage] = ()) -> Response[str]:
    view = AccountView.of(usage, wired().settings.tenant_rate, types)
    return json_response(HTTPStatus.OK, view, etag(usage))


def etag(usage: Usage) -> dict[str, str]:
    return {"ETag": f'"{usage.limit_version}"'}


@gate.exempt_from_tenant_rate  # as the account's PUT
def put_type(
    accountId: AccountId,
    resourceType: ResourceType,
    request: Annotated[PutTypeRequest, Body()],
    if_match: IfMatch = None,
    idempotency_key: PutIdempotencyKey = None,
) -> Response[str]:
    change = limit_change(request.limit, request.thresholds, if_match, idempotency_key)
    usage = accounts.put_limit(wired().api_store, Quota(accountId, resourceType), change, now, caller_waiting)
    return json_response(HTTPStatus.OK, TypeView.of(usage), etag(usage))


def get_type(accountId: AccountId, resourceType: ResourceType) -> Response[str]:
    usage = accounts.get_usage(wired().api_store, Quota(accountId, resourceType))
    return json_response(HTTPStatus.OK, TypeView.of(usage), etag(usage))


def list_types(accountId: AccountId) -> Response[str]:
    read = accounts.get_account(wired().api_store, accountId)
    return json_response(HTTPStatus.OK, TypeList(items=[TypeView.of(usage) for usage in read.every_type]))


def create_resource(
    family: Family,
    accountId: AccountId,
    resourceType: ResourceType,
    request: Annotated[CreateResourceRequest, Body()],
    idempotency_key: IdempotencyKey = None,
) -> Response[str]:
    quota = Quota(accountId, resourceType)
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
        return json_response(HTTPStatus.OK, family.view.of(created.resource))
    metrics.add_metric(name="ResourcesCreated", unit=MetricUnit.Count, value=1)
    location = f"{family.url(quota)}/{created.resource.resource_id}"
    return json_response(HTTPStatus.CREATED, family.view.of(created.resource), {"Location": location})


def list_resources(
    family: Family,
    accountId: AccountId,
    resourceType: ResourceType,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: Cursor = None,
) -> Response[str]:
    items, next_cursor = list_page(Quota(accountId, resourceType), limit, cursor, family.view)
    return json_response(HTTPStatus.OK, family.page(items=items, nextCursor=next_cursor))


def list_page(quota: Quota, limit: int, cursor: str | None, view: type[View]) -> tuple[list[View], str | None]:
    """A page of the quota's resources as `view`s, and the cursor of the next page."""

    def listed_size(resource: Resource) -> int:
        """The bytes one item adds to a page's proxy response: its JSON escaped, and a comma."""
        return escaped_size(render(view.of(resource).model_dump())) + 1

    budget = PageBudget(room=PAGE_ITEMS_BUDGET, size_of=listed_size)
    page = accounts.list_resources(wired().api_store, quota, limit, cursor, budget)
    return [view.of(item) for item in page.items], page.next_cursor


def get_resource(
    family: Family, accountId: AccountId, resourceType: ResourceType, resourceId: ResourceId
) -> Response[str]:
    resource = accounts.get_resource(wired().api_store, Quota(accountId, resourceType), resourceId)
    return json_response(HTTPStatus.OK, family.view.of(resource))


def delete_resource(
    family: Family, accountId: AccountId, resourceType: ResourceType, resourceId: ResourceId
) -> Response[str]:
    accounts.delete_resource(
        wired().api_store,
        Quota(accountId, resourceType),
        resourceId,
        now,
        in_time=caller_waiting,
        directory=wired().shard_directory,
    )
    metrics.add_metric(name="ResourcesDeleted", unit=MetricUnit.Count, value=1)
    return Response(status_code=HTTPStatus.NO_CONTENT.value, body="")


# Every route: its method, its path, its contract (functions/api/contract.py) and what answers it.
# An operation on resources (`Resources`) is routed in each family, its path below the family's.
ROUTES: tuple[router.Route, ...] = (
    ("PUT", ACCOUNT_PATH, PUT_ACCOUNT_OPERATION, put_account),
    ("GET", ACCOUNT_PATH, GET_ACCOUNT_OPERATION, get_account),
    ("PUT", TYPE_PATH, PUT_TYPE_OPERATION, put_type),
    ("GET", TYPE_PATH, GET_TYPE_OPERATION, get_type),
    ("GET", TYPES_PATH, LIST_TYPES_OPERATION, list_types),
    ("POST", RESOURCES_PATH, CREATE_RESOURCE_OPERATION, create_resource),
    ("GET", RESOURCES_PATH, LIST_RESOURCES_OPERATION, list_resources),
    ("GET", RESOURCE_PATH, GET_RESOURCE_OPERATION, get_resource),
    ("DELETE", RESOURCE_PATH, DELETE_RESOURCE_OPERATION, delete_resource),
)


router.register(app, ROUTES)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
# Responses and errors carry tenants' data (docs/security.md): never in the trace's metadata.
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext, clients: Clients | None = None) -> dict[str, Any]:
    with routing(event, clients or default_clients()):
        return app.resolve(as_json_request(event), context)
