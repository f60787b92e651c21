"""API Lambda: REST proxy events in, the HTTP contract (docs/openapi.json) out.

Each operation validates its input with typed models and calls one flow of functions.core.accounts.
No transaction runs here; DynamoDB failures surface as a plain 503 (functions/api/errors.py).
ROUTES is every route, a row each: its method, its path, its contract (functions/api/contract.py:
its id, summary, answers and links) and the function that answers it; functions/api/router.py
registers them (an operation on resources below the account's path, the default type's, and
below a type's) and answers each path's other methods 405. What a request passes before its
route is functions/api/gate.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api import contract, errors, gate, router
from functions.api.contract import (
    DEFAULT_PAGE_SIZE,
    AccountId,
    AskedAmount,
    Cursor,
    DeleteResources,
    HistoryPeriods,
    IdempotencyKey,
    PageSize,
    PlanFilter,
    PlanId,
    PutIdempotencyKey,
    ResourceId,
    ResourceType,
)
from functions.api.json_body import page_budget, parse_body, render
from functions.api.models import (
    AccountDeletionView,
    AccountEntryView,
    AccountPageView,
    AccountView,
    AdmissionView,
    CreateResourceRequest,
    PeriodHistoryView,
    PlanPageView,
    PlanView,
    PutAccountRequest,
    PutPlanRequest,
    PutTypeRequest,
    QuotaAnswer,
    ResizeResourceRequest,
    TypeDeletionView,
    TypeList,
    TypeView,
)
from functions.api.preconditions import IfMatch, PlanIfMatch, ResourceIfMatch, parse_if_match
from functions.api.proxy_event import as_json_request
from functions.api.routed import caller, caller_waiting, now, received_ms, routing, wired
from functions.api.router import (
    ACCOUNT_PATH,
    ACCOUNTS_PATH,
    ADMISSION_PATH,
    HISTORY_PATH,
    OVERRIDE_PATH,
    PLAN_PATH,
    PLANS_PATH,
    RESOURCE_PATH,
    RESOURCES_PATH,
    TYPE_PATH,
    TYPES_PATH,
    Family,
)
from functions.core import accounts, grants, history, leases, lifecycle, offboarding, plans, rollout
from functions.core.history import DEFAULT_HISTORY_PERIODS
from functions.core.leases import iso_timestamp
from functions.core.model import NewResource, Quota, QuotaMode, Resource, TenantRate, Usage
from functions.core.periods import Period
from functions.shared.observability import logger, metrics, tracer
from functions.shared.wiring import Wiring
from functions.shared.wiring import default as default_wiring


def build_clients_during_init() -> None:
    """Build this execution environment's SDK client during INIT, not in its first request, as AWS
    advises ("Initialize SDK clients and database connections outside of the function handler",
    Lambda's best practices): building it costs about 100 ms, and a misconfiguration fails INIT.
    Only in Lambda (which sets AWS_LAMBDA_FUNCTION_NAME), not in a test that imports this module."""
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        default_wiring().dynamodb  # noqa: B018 - built for its side effect


build_clients_during_init()

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
    if request.plan is not None:
        versions, must_exist = parse_if_match(if_match)
        read = plans.join_plan(
            wired().api_store,
            accountId,
            request.plan,
            received_ms(),
            now,
            caller_waiting,
            caller(),
            if_match=versions,
            must_exist=must_exist,
        )
        return account_response(read.default, read.types)
    limit = request.limit if request.limit is not None else 0  # the model refuses a body with neither
    rate = request.rateLimit.as_rate() if request.rateLimit else None
    change = limit_change(limit, request.thresholds, if_match, idempotency_key, rate, request.as_period(), request.mode)
    usage = accounts.put_account(wired().api_store, Quota(accountId), change, now, caller_waiting)
    wired().tenant_limiter.learn(accountId, usage.rate)
    return account_response(usage)


@gate.exempt_from_tenant_rate  # as the account's PUT
def delete_account(accountId: AccountId) -> Response[str]:
    deletion = offboarding.delete_account(
        wired().offboarding_store, accountId, received_ms(), caller(), wired().clock.now()
    )
    requested = iso_timestamp(datetime.fromtimestamp(deletion.requested_ms / 1000, UTC))
    return json_response(HTTPStatus.ACCEPTED, AccountDeletionView(accountId=accountId, requestedAt=requested))


def get_account(accountId: AccountId) -> Response[str]:
    read = accounts.get_account(wired().api_store, accountId, now())
    return account_response(read.default, read.types)


def limit_change(
    limit: int,
    thresholds: list[int] | None,
    if_match: str | None,
    idempotency_key: str | None,
    rate: TenantRate | None = None,
    period: Period | None = None,
    mode: str | None = None,
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
        period=period,
        mode=mode,
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
    quota = Quota(accountId, resourceType)
    change = limit_change(
        request.limit, request.thresholds, if_match, idempotency_key, period=request.as_period(), mode=request.mode
    )
    ends = request.expires_at_ms()
    if ends is not None:  # an expiring grant: its end checked by the API's clock
        change = replace(change, grant_ends=grants.check_end(quota, ends, wired().clock.epoch_ms()))
    usage = accounts.put_limit(wired().api_store, quota, change, now, caller_waiting)
    return json_response(HTTPStatus.OK, TypeView.of(usage), etag(usage))


@gate.exempt_from_tenant_rate  # as a type's PUT
def remove_override(accountId: AccountId, resourceType: ResourceType) -> Response[str]:
    quota = Quota(accountId, resourceType)
    usage = plans.remove_override(wired().api_store, quota, received_ms(), now, caller_waiting, caller())
    return json_response(HTTPStatus.OK, TypeView.of(usage), etag(usage))


@gate.exempt_from_tenant_rate  # as a type's PUT
def delete_type(
    accountId: AccountId, resourceType: ResourceType, deleteResources: DeleteResources = False
) -> Response[str]:
    deleted = lifecycle.delete_type(
        wired().api_store,
        Quota(accountId, resourceType),
        deleteResources,
        received_ms(),
        now,
        caller_waiting,
        wired().shard_directory,
        caller(),
    )
    removed = deleted is lifecycle.TypeDeletion.REMOVED
    return json_response(
        HTTPStatus.OK, TypeDeletionView(accountId=accountId, resourceType=resourceType, removed=removed)
    )


def put_plan(planId: PlanId, request: Annotated[PutPlanRequest, Body()], if_match: PlanIfMatch = None) -> Response[str]:
    versions, must_exist = parse_if_match(if_match)
    quotas = {
        name: plans.PlanQuota(
            limit=quota.limit,
            thresholds=None if quota.thresholds is None else tuple(quota.thresholds),
            period=quota.as_period(),
            mode=quota.mode or QuotaMode.ENFORCE,
        )
        for name, quota in request.quotas.items()
    }
    written = plans.put_plan(wired().api_store, planId, quotas, now(), caller(), versions, must_exist)
    return json_response(HTTPStatus.OK, PlanView.of(written), plan_etag(written))


def get_plan(planId: PlanId) -> Response[str]:
    found = plans.get_plan(wired().api_store, planId)
    progress = rollout.progress(wired().api_store, found)
    return json_response(HTTPStatus.OK, PlanView.of(found, progress), plan_etag(found))


def list_plans(limit: PageSize = DEFAULT_PAGE_SIZE, cursor: Cursor = None) -> Response[str]:
    page = wired().api_store.list_plans(limit, cursor)
    items = [PlanView.of(plan) for plan in page.items]
    return json_response(HTTPStatus.OK, PlanPageView(items=items, nextCursor=page.next_cursor))


def list_accounts(plan: PlanFilter = None, limit: PageSize = DEFAULT_PAGE_SIZE, cursor: Cursor = None) -> Response[str]:
    page = wired().api_store.list_accounts(plan, limit, cursor)
    items = [AccountEntryView.of(entry) for entry in page.items]
    return json_response(HTTPStatus.OK, AccountPageView(items=items, nextCursor=page.next_cursor))


def plan_etag(plan: plans.Plan) -> dict[str, str]:
    return {"ETag": f'"{plan.version}"'}


def get_type(accountId: AccountId, resourceType: ResourceType) -> Response[str]:
    usage = accounts.get_usage(wired().api_store, Quota(accountId, resourceType), now())
    return json_response(HTTPStatus.OK, TypeView.of(usage), etag(usage))


def list_types(accountId: AccountId) -> Response[str]:
    read = accounts.get_account(wired().api_store, accountId, now())
    return json_response(HTTPStatus.OK, TypeList(items=[TypeView.of(usage) for usage in read.every_type]))


def create_resource(
    family: Family,
    accountId: AccountId,
    resourceType: ResourceType,
    request: Annotated[CreateResourceRequest, Body()],
    idempotency_key: IdempotencyKey = None,
) -> Response[str]:
    quota = Quota(accountId, resourceType)
    created = grants.admitting_past_grants(
        lambda: accounts.create_resource(
            wired().api_store,
            quota,
            NewResource(name=request.name, attributes=request.attributes, amount=request.amount),
            idempotency_key,
            now,
            in_time=caller_waiting,
            directory=wired().shard_directory,
        ),
        wired().api_store,
        now,
        caller_waiting,
    )
    if created.replayed:
        metrics.add_metric(name="IdempotentReplays", unit=MetricUnit.Count, value=1)
        return json_response(HTTPStatus.OK, family.view.of(created.resource))
    metrics.add_metric(name="ResourcesCreated", unit=MetricUnit.Count, value=1)
    if created.shadowed is not None:
        errors.log_refusal(created.shadowed, shadow=True)
    location = f"{family.url(quota)}/{created.resource.resource_id}"
    return json_response(HTTPStatus.CREATED, family.view.of(created.resource), {"Location": location})


def list_resources(
    family: Family,
    accountId: AccountId,
    resourceType: ResourceType,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: Cursor = None,
) -> Response[str]:
    budget = page_budget(lambda resource: family.view.of(resource).model_dump())
    page = accounts.list_resources(wired().api_store, Quota(accountId, resourceType), limit, cursor, budget, now())
    items = [family.view.of(item) for item in page.items]
    return json_response(HTTPStatus.OK, family.page(items=items, nextCursor=page.next_cursor))


def get_resource(
    family: Family, accountId: AccountId, resourceType: ResourceType, resourceId: ResourceId
) -> Response[str]:
    resource = accounts.get_resource(wired().api_store, Quota(accountId, resourceType), resourceId)
    return json_response(HTTPStatus.OK, family.view.of(resource), resource_etag(resource))


def resource_etag(resource: Resource) -> dict[str, str]:
    return {"ETag": f'"{resource.version}"'}


def resize_resource(
    family: Family,
    accountId: AccountId,
    resourceType: ResourceType,
    resourceId: ResourceId,
    request: Annotated[ResizeResourceRequest, Body()],
    if_match: ResourceIfMatch = None,
    idempotency_key: IdempotencyKey = None,
) -> Response[str]:
    versions, _ = parse_if_match(if_match)  # * matches any version of a resource that exists
    resource = grants.admitting_past_grants(
        lambda: accounts.resize_resource(
            wired().api_store,
            Quota(accountId, resourceType),
            resourceId,
            request.amount,
            now,
            if_match=versions,
            idempotency_key=idempotency_key,
            in_time=caller_waiting,
            directory=wired().shard_directory,
            on_shadow=lambda refusal: errors.log_refusal(refusal, shadow=True),
        ),
        wired().api_store,
        now,
        caller_waiting,
    )
    return json_response(HTTPStatus.OK, family.view.of(resource), resource_etag(resource))


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


def get_admission(
    family: Family, accountId: AccountId, resourceType: ResourceType, amount: AskedAmount = 1
) -> Response[str]:
    admission = accounts.would_admit(wired().api_store, Quota(accountId, resourceType), amount, now())
    view = AdmissionView(amount=admission.amount, admitted=admission.admitted, free=admission.free)
    return json_response(HTTPStatus.OK, view)


def get_history(
    family: Family, accountId: AccountId, resourceType: ResourceType, periods: HistoryPeriods = DEFAULT_HISTORY_PERIODS
) -> Response[str]:
    read = history.period_history(wired().api_store, Quota(accountId, resourceType), periods, wired().clock.now())
    return json_response(HTTPStatus.OK, PeriodHistoryView.of(read))


# Every route: its method, its path, its contract (functions/api/contract.py) and what answers it.
# An operation on resources (`Resources`) is routed in each family, its path below the family's.
ROUTES: tuple[router.Route, ...] = (
    ("PUT", ACCOUNT_PATH, contract.PUT_ACCOUNT_OPERATION, put_account),
    ("GET", ACCOUNT_PATH, contract.GET_ACCOUNT_OPERATION, get_account),
    ("DELETE", ACCOUNT_PATH, contract.DELETE_ACCOUNT_OPERATION, delete_account),
    ("PUT", TYPE_PATH, contract.PUT_TYPE_OPERATION, put_type),
    ("GET", TYPE_PATH, contract.GET_TYPE_OPERATION, get_type),
    ("DELETE", TYPE_PATH, contract.DELETE_TYPE_OPERATION, delete_type),
    ("GET", TYPES_PATH, contract.LIST_TYPES_OPERATION, list_types),
    ("POST", RESOURCES_PATH, contract.CREATE_RESOURCE_OPERATION, create_resource),
    ("GET", RESOURCES_PATH, contract.LIST_RESOURCES_OPERATION, list_resources),
    ("GET", RESOURCE_PATH, contract.GET_RESOURCE_OPERATION, get_resource),
    ("DELETE", RESOURCE_PATH, contract.DELETE_RESOURCE_OPERATION, delete_resource),
    ("PATCH", RESOURCE_PATH, contract.RESIZE_RESOURCE_OPERATION, resize_resource),
    ("GET", ADMISSION_PATH, contract.ADMISSION_OPERATION, get_admission),
    ("GET", HISTORY_PATH, contract.HISTORY_OPERATION, get_history),
    ("DELETE", OVERRIDE_PATH, contract.REMOVE_OVERRIDE_OPERATION, remove_override),
    ("PUT", PLAN_PATH, contract.PUT_PLAN_OPERATION, put_plan),
    ("GET", PLAN_PATH, contract.GET_PLAN_OPERATION, get_plan),
    ("GET", PLANS_PATH, contract.LIST_PLANS_OPERATION, list_plans),
    ("GET", ACCOUNTS_PATH, contract.LIST_ACCOUNTS_OPERATION, list_accounts),
)


router.register(app, ROUTES)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
# Responses and errors carry tenants' data (docs/security.md): never in the trace's metadata.
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext, wiring: Wiring | None = None) -> dict[str, Any]:
    with routing(event, wiring or default_wiring()):
        return app.resolve(as_json_request(event), context)
