"""What the OpenAPI document (docs/openapi.json) says beyond the routes' models: the parameters
routes share, each operation's id and links, and the answers a route documents besides its own
results (its errors, in the envelope of functions/api/errors.py).

Each operation is declared once here (`Operation`: its id, summary and answers), and the handler
registers it on its path; an operation on resources is declared for both families (`Resources`):
the routes without a type and a type's. scripts/openapi.py writes the document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import content_types
from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse, OpenAPIResponseHeader

from functions.api.models import (
    AccountDeletionView,
    AccountPageView,
    AccountView,
    AdmissionView,
    ErrorResponse,
    PeriodHistoryView,
    PlanPageView,
    PlanView,
    ResourcePage,
    ResourceView,
    TypeDeletionView,
    TypedResourcePage,
    TypedResourceView,
    TypeList,
    TypeView,
)
from functions.core.history import DEFAULT_HISTORY_PERIODS, MAX_HISTORY_PERIODS
from functions.core.model import (
    DEFAULT_RESOURCE_TYPE,
    ID_PATTERN,
    IDEMPOTENCY_KEY_PATTERN,
    MAX_AMOUNT,
    MAX_RESOURCE_TYPES,
    RESOURCE_TYPE_PATTERN,
)

AccountId = Annotated[str, Path(pattern=ID_PATTERN, description="Account id: letters, digits, - and _.")]
ResourceType = Annotated[
    str,
    Path(
        pattern=RESOURCE_TYPE_PATTERN,
        description=f"Resource type: a lowercase letter, then up to 31 lowercase letters, digits and -. "
        f"`{DEFAULT_RESOURCE_TYPE}` is the type of the routes without one; an account has at most "
        f"{MAX_RESOURCE_TYPES} others.",
    ),
]
ResourceId = Annotated[str, Path(pattern=ID_PATTERN)]
PlanId = Annotated[
    str,
    Path(
        pattern=RESOURCE_TYPE_PATTERN,
        description="Plan name: a lowercase letter, then up to 31 lowercase letters, digits and -.",
    ),
]
PlanFilter = Annotated[
    str | None,
    Query(
        pattern=RESOURCE_TYPE_PATTERN,
        description="Only the accounts on this plan (a plan's name); omitted, every account.",
    ),
]
IdempotencyKey = Annotated[
    str | None,
    Header(pattern=IDEMPOTENCY_KEY_PATTERN, description="Retries with the same key never count twice."),
]
# A PUT's: every attempt of one call sends the same key, and a retry is taken for its first attempt.
PutIdempotencyKey = Annotated[
    str | None,
    Header(
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Send the same key on every attempt of one PUT: a retry is then that PUT, received when its "
        "first attempt was, so it never overwrites a PUT received after that attempt, and a retry of one that "
        "landed changes nothing again. The same key with another body is IdempotencyKeyMismatch.",
    ),
]

AskedAmount = Annotated[
    int,
    Query(ge=1, le=MAX_AMOUNT, description="The units a create would ask for: 1 to 2^53 - 1, default 1."),
]

HistoryPeriods = Annotated[
    int,
    Query(
        ge=1,
        le=MAX_HISTORY_PERIODS,
        description=f"How many periods: the current one and the ones before it, 1 to {MAX_HISTORY_PERIODS} "
        f"(a year of months and the current one), default {DEFAULT_HISTORY_PERIODS}.",
    ),
]

DeleteResources = Annotated[
    bool,
    Query(
        description="true: delete the type's resources too, each as its DELETE does (counted as a delete); "
        "false (the default): a type that holds resources is refused 409 TypeNotEmpty.",
    ),
]

DEFAULT_PAGE_SIZE = 25
MAX_PAGE_SIZE = 100
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

# The operations' ids, which the links between them name.
PUT_ACCOUNT, GET_ACCOUNT = "putAccount", "getAccount"
LIST_RESOURCES, CREATE_RESOURCE = "listResources", "createResource"
GET_RESOURCE, DELETE_RESOURCE = "getResource", "deleteResource"
PUT_TYPE, GET_TYPE, LIST_TYPES = "putResourceType", "getResourceType", "listResourceTypes"
LIST_TYPED_RESOURCES, CREATE_TYPED_RESOURCE = "listTypedResources", "createTypedResource"
GET_TYPED_RESOURCE, DELETE_TYPED_RESOURCE = "getTypedResource", "deleteTypedResource"
RESIZE_RESOURCE, RESIZE_TYPED_RESOURCE = "resizeResource", "resizeTypedResource"
GET_ADMISSION, GET_TYPED_ADMISSION = "getAdmission", "getTypedAdmission"
GET_HISTORY, GET_TYPED_HISTORY = "getPeriodHistory", "getTypedPeriodHistory"
PUT_PLAN, GET_PLAN, LIST_PLANS = "putPlan", "getPlan", "listPlans"
LIST_ACCOUNTS = "listAccounts"
REMOVE_OVERRIDE = "removeOverride"
DELETE_TYPE = "deleteResourceType"
DELETE_ACCOUNT = "deleteAccount"


def link(operation_id: str, **parameters: str) -> dict[str, Any]:
    """An OpenAPI link: where a client goes next with what this answer (or its request) named."""
    return {"operationId": operation_id, "parameters": parameters}


ACCOUNT_OF_REQUEST = "$request.path.accountId"
# What a client does next: an account just put can be read, listed and created in; one just read
# can be changed, on the condition that it is still as read, asked whether a create would be
# admitted, its types listed, deleted, and, when its answer names a period, its periods' history read; a
# resource just created (or replayed) can be read, resized and deleted, and its account (type) read
# again, asked about the next create, its history read and its limit changed (with no If-Match: a
# raise after a create). Each of the account's next steps is one link from a create, so a fuzzer's
# stateful phase, which starts from creates, reaches them without chains of reads.
ACCOUNT_READS = {
    operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST) for operation_id in (GET_ACCOUNT, LIST_RESOURCES)
}
PUT_ACCOUNT_LINKS = {**ACCOUNT_READS, CREATE_RESOURCE: link(CREATE_RESOURCE, accountId=ACCOUNT_OF_REQUEST)}
GET_ACCOUNT_LINKS = {
    PUT_ACCOUNT: link(PUT_ACCOUNT, accountId=ACCOUNT_OF_REQUEST, **{"header.If-Match": "$response.header.ETag"}),
    **{
        operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST)
        for operation_id in (GET_ADMISSION, LIST_TYPES, GET_HISTORY, DELETE_ACCOUNT)
    },
}
CREATE_RESOURCE_LINKS = {
    **ACCOUNT_READS,
    **{
        operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST)
        for operation_id in (GET_ADMISSION, LIST_TYPES, GET_HISTORY, PUT_ACCOUNT)
    },
    **{
        operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST, resourceId="$response.body#/resourceId")
        for operation_id in (GET_RESOURCE, DELETE_RESOURCE, RESIZE_RESOURCE)
    },
}

TYPE_OF_REQUEST = "$request.path.resourceType"
# The same next steps on a type's routes, which also name the type.
TYPE_READS = {
    operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST, resourceType=TYPE_OF_REQUEST)
    for operation_id in (GET_TYPE, LIST_TYPED_RESOURCES)
}
# A type's PUT on an account whose plan gives the type is an override, which can be removed.
PUT_TYPE_LINKS = {
    **TYPE_READS,
    **{
        operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST, resourceType=TYPE_OF_REQUEST)
        for operation_id in (CREATE_TYPED_RESOURCE, REMOVE_OVERRIDE)
    },
}
# A type just read can also be deleted (one of the account's own, not its plan's: the read said which).
GET_TYPE_LINKS = {
    PUT_TYPE: link(
        PUT_TYPE,
        accountId=ACCOUNT_OF_REQUEST,
        resourceType=TYPE_OF_REQUEST,
        **{"header.If-Match": "$response.header.ETag"},
    ),
    **{
        operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST, resourceType=TYPE_OF_REQUEST)
        for operation_id in (GET_TYPED_ADMISSION, GET_TYPED_HISTORY, DELETE_TYPE)
    },
}
CREATE_TYPED_RESOURCE_LINKS = {
    **TYPE_READS,
    **{
        operation_id: link(operation_id, accountId=ACCOUNT_OF_REQUEST, resourceType=TYPE_OF_REQUEST)
        for operation_id in (GET_TYPED_ADMISSION, GET_TYPED_HISTORY, PUT_TYPE)
    },
    **{
        operation_id: link(
            operation_id,
            accountId=ACCOUNT_OF_REQUEST,
            resourceType=TYPE_OF_REQUEST,
            resourceId="$response.body#/resourceId",
        )
        for operation_id in (GET_TYPED_RESOURCE, DELETE_TYPED_RESOURCE, RESIZE_TYPED_RESOURCE)
    },
}

# A create in an account, or of a type, that does not exist answers 404: its client puts the
# account (the type) first. A fuzzer's stateful phase follows these too: it starts from creates,
# in accounts of its own making, and without them never reached what a create makes.
CREATE_RESOURCE_NOT_FOUND_LINKS = {PUT_ACCOUNT: link(PUT_ACCOUNT, accountId=ACCOUNT_OF_REQUEST)}
CREATE_TYPED_RESOURCE_NOT_FOUND_LINKS = {
    PUT_TYPE: link(PUT_TYPE, accountId=ACCOUNT_OF_REQUEST, resourceType=TYPE_OF_REQUEST)
}

ETAG_HEADER: dict[str, OpenAPIResponseHeader] = {
    "ETag": {
        "description": "The version of the limit (the account's default type's, or the type's on a type's "
        'routes), as a strong entity tag ("3").',
        "schema": {"type": "string"},
    }
}

RESOURCE_ETAG_HEADER: dict[str, OpenAPIResponseHeader] = {
    "ETag": {
        "description": 'The resource\'s version, as a strong entity tag ("1" until its first resize; each '
        "resize makes the next), for a resize's If-Match.",
        "schema": {"type": "string"},
    }
}

# What any route may answer besides its own results: its errors in the envelope, and what API
# Gateway answers before the function runs (docs/security.md), in the same envelope.
ERRORS = {
    400: "ValidationError: a path, query, header or body the contract does not allow (every body is read as JSON, "
    "whatever its Content-Type; an empty one where a body is wanted too); InvalidCursor: a cursor this API did not "
    "return (a cursor is opaque); DefaultTypeNotDeletable: a delete of the default type (it goes only with its "
    "account); nothing was written",
    401: "API Gateway, with the JWT authorizer (-c authorizer=jwt): Unauthorized (no bearer token, or one that is "
    "not valid)",
    403: "API Gateway: MissingAuthenticationToken (unsigned, or a method API Gateway does not take, such as TRACE), "
    "InvalidSignature, ExpiredToken, AccessDenied (another tenant's path, or a tenant setting a limit)",
    404: "AccountNotFound (no such account; on a type's routes, the account has no limit of that type), "
    "ResourceNotFound, PlanNotFound (no plan of that name: nothing written), OverrideNotFound (the type's limit "
    "is not an override of its account's plan)",
    409: "LimitExceeded (the account, or the type, is at its limit), IdempotencyKeyReused (the key's resource was "
    f"deleted), TooManyResourceTypes (a PUT of a new type when the account has {MAX_RESOURCE_TYPES} types besides "
    "the default), PeriodChangeRefused (a PUT asking a quota for another period: a holding quota becomes periodic "
    "only while it holds nothing, a periodic one keeps its period), PeriodClosed (a delete or resize of a usage "
    "record whose period is over), QuotaNotPeriodic (a periods' history of a holding quota, which has no periods), "
    "TypeNotEmpty (a delete of a type that holds resources, without deleteResources=true), PlanType (a delete of a "
    "type its account's plan gives), AccountBeingDeleted (a PUT that would create an account whose deletion is "
    "under way)",
    412: "PreconditionFailed: If-Match names another version of the limit (or the account, or its type, does not "
    "exist; on a plan's route, of the plan)",
    413: "PayloadTooLarge: a body over 64 KiB (the function), or over 10 MB (API Gateway)",
    422: "IdempotencyKeyMismatch: the key was sent before with another body",
    429: "TenantThrottled: the account is over its rate limit; API Gateway: Throttled (the stage's limit). "
    "Both with Retry-After",
    500: "API Gateway: InternalError (a failure of its own, or of the JWT authorizer)",
    502: "API Gateway: InternalError (the function answered something that is not a proxy response; a write "
    "may have landed: retry idempotently)",
    503: "ServiceUnavailable, with Retry-After: DynamoDB failed after retries (the function); or, from API "
    "Gateway's INTEGRATION_FAILURE, the function was throttled, failed, ran past its timeout or outgrew Lambda's "
    "6 MB (a write may have landed); retry idempotently after Retry-After",
    504: "API Gateway: IntegrationTimeout (no answer within 29 s; a write may have landed: retry idempotently)",
}
ALWAYS = (400, 401, 403, 429, 500, 502, 503, 504)


def answers(
    own: dict[int, tuple[str, type | None]],
    *errors: int,
    headers: dict[str, OpenAPIResponseHeader] | None = None,
    links: dict[str, Any] | None = None,
    error_links: dict[int, dict[str, Any]] | None = None,
) -> dict[int, OpenAPIResponse]:
    """The route's responses for the OpenAPI document: its own answers (with `headers` and `links`),
    then its errors (with `error_links`, by status)."""
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
        if error_links and status in error_links:
            documented[status]["links"] = error_links[status]
    return documented


@dataclass(frozen=True)
class Operation:
    """One operation as the document states it: what Powertools' `app.route` takes besides the
    path and the method."""

    operation_id: str
    summary: str
    responses: dict[int, OpenAPIResponse]
    description: str | None = None

    def route(self) -> dict[str, Any]:
        """The keyword arguments of `app.route` that document this operation."""
        return {
            "operation_id": self.operation_id,
            "summary": self.summary,
            "description": self.description,
            "responses": self.responses,
        }


@dataclass(frozen=True)
class Resources:
    """An operation on resources, as the routes without a type and a type's routes document it."""

    default: Operation
    typed: Operation

    def of(self, typed: bool) -> Operation:
        return self.typed if typed else self.default


PUT_ACCOUNT_OPERATION = Operation(
    PUT_ACCOUNT,
    "Create an account or change its limit (admin only)",
    answers(
        {
            200: (
                "The account, with its new limit. A PUT overtaken by one received after it changes nothing "
                "and answers the account as that later PUT left it; so does a retry (the same Idempotency-Key) "
                "of one that landed. With `plan`: the account on the plan, with every type (docs/plans.md)",
                AccountView,
            )
        },
        404,
        409,
        412,
        413,
        422,
        headers=ETAG_HEADER,
        links=PUT_ACCOUNT_LINKS,
    ),
)
GET_ACCOUNT_OPERATION = Operation(
    GET_ACCOUNT,
    "Read an account's limit and both counters",
    answers(
        {200: ("The account; ETag names its limit's version, for If-Match", AccountView)},
        404,
        headers=ETAG_HEADER,
        links=GET_ACCOUNT_LINKS,
    ),
)
PUT_TYPE_OPERATION = Operation(
    PUT_TYPE,
    "Set the limit of one of an account's resource types, creating the account if it has none (admin only)",
    answers(
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
GET_TYPE_OPERATION = Operation(
    GET_TYPE,
    "Read one resource type's limit and both counters",
    answers(
        {200: ("The type; ETag names its limit's version, for If-Match", TypeView)},
        404,
        headers=ETAG_HEADER,
        links=GET_TYPE_LINKS,
    ),
)
LIST_TYPES_OPERATION = Operation(
    LIST_TYPES,
    "Read every resource type of an account, the default type included",
    answers({200: ("Every type's limit and counters", TypeList)}, 404),
)
CREATE_RESOURCE_OPERATION = Resources(
    default=Operation(
        CREATE_RESOURCE,
        "Create a resource if the account is below its limit",
        answers(
            {
                201: ("Created; Location names it", ResourceView),
                200: (
                    "A replay of an earlier call with the same Idempotency-Key: the resource it created",
                    ResourceView,
                ),
            },
            404,
            409,
            413,
            422,
            links=CREATE_RESOURCE_LINKS,
            error_links={404: CREATE_RESOURCE_NOT_FOUND_LINKS},
        ),
    ),
    typed=Operation(
        CREATE_TYPED_RESOURCE,
        "Create a resource of a type if the account is below that type's limit",
        answers(
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
    ),
)
# The order of a list page (docs/api.md, "Pages, and their order"): the sort key's, RESOURCE#<id>.
LIST_ORDER = (
    "Live resources in resource-id order, not creation order (an id is a random UUID, or one derived from the "
    "create's Idempotency-Key): one created later may come on an earlier page. Pass nextCursor on until it is "
    "null and every live resource comes exactly once."
)
LIST_RESOURCES_OPERATION = Resources(
    default=Operation(
        LIST_RESOURCES,
        "List live resources, a page at a time by cursor",
        answers({200: ("A page of resources, and the cursor of the next", ResourcePage)}, 404),
        description=LIST_ORDER,
    ),
    typed=Operation(
        LIST_TYPED_RESOURCES,
        "List a type's live resources, a page at a time by cursor",
        answers({200: ("A page of the type's resources, and the cursor of the next", TypedResourcePage)}, 404),
        description=LIST_ORDER,
    ),
)
GET_RESOURCE_OPERATION = Resources(
    default=Operation(
        GET_RESOURCE,
        "Read one live resource",
        answers({200: ("The resource", ResourceView)}, 404, headers=RESOURCE_ETAG_HEADER),
    ),
    typed=Operation(
        GET_TYPED_RESOURCE,
        "Read one live resource of a type",
        answers({200: ("The resource", TypedResourceView)}, 404, headers=RESOURCE_ETAG_HEADER),
    ),
)
ADMISSION_DESCRIPTION = (
    "Advisory, for a UI that greys out a button: it reserves nothing, and a create a moment later may find fewer "
    "free units or more (other creates, deletes, limit changes). The create alone decides."
)
ADMISSION_OPERATION = Resources(
    default=Operation(
        GET_ADMISSION,
        "Would a create of `amount` units be admitted now?",
        answers({200: ("Whether it would, and the free units", AdmissionView)}, 404),
        description=ADMISSION_DESCRIPTION,
    ),
    typed=Operation(
        GET_TYPED_ADMISSION,
        "Would a create of `amount` units of a type be admitted now?",
        answers({200: ("Whether it would, and the type's free units", AdmissionView)}, 404),
        description=ADMISSION_DESCRIPTION,
    ),
)
HISTORY_DESCRIPTION = (
    "A periodic quota's exact totals (docs/periods.md#history): its current period and the ones before it, newest "
    "first. A period is `settled` once it ended at least a minute ago and nothing of it is pending: its `eventual` "
    "is then final. A period nobody created in reads 0 at the quota's current limit. One read of the quota and one "
    "BatchGetItem of its periods."
)
HISTORY_OPERATION = Resources(
    default=Operation(
        GET_HISTORY,
        "A periodic quota's totals, period by period",
        answers({200: ("The periods, newest first", PeriodHistoryView)}, 404, 409),
        description=HISTORY_DESCRIPTION,
    ),
    typed=Operation(
        GET_TYPED_HISTORY,
        "A periodic type's totals, period by period",
        answers({200: ("The type's periods, newest first", PeriodHistoryView)}, 404, 409),
        description=HISTORY_DESCRIPTION,
    ),
)
RESIZE_DESCRIPTION = (
    "Reserve, then settle: create with the units you may need, resize to what you used (or delete to free them "
    "all). Growing is admitted as a create of the difference would be; shrinking always succeeds and frees the "
    "difference at once. Send If-Match with the ETag you read to resize only that version (412 otherwise), and "
    "an Idempotency-Key on every attempt of one resize: a retry after it landed answers the resource as it is "
    "and changes nothing; with If-Match too, a retry after another resize is 412, never applied twice."
)
RESIZE_RESOURCE_OPERATION = Resources(
    default=Operation(
        RESIZE_RESOURCE,
        "Resize a live resource: the units it holds",
        answers(
            {200: ("The resource at its new amount (or as it was, when it already held it)", ResourceView)},
            404,
            409,
            412,
            413,
            422,
            headers=RESOURCE_ETAG_HEADER,
        ),
        description=RESIZE_DESCRIPTION,
    ),
    typed=Operation(
        RESIZE_TYPED_RESOURCE,
        "Resize a live resource of a type: the units of the type's limit it holds",
        answers(
            {200: ("The resource at its new amount (or as it was, when it already held it)", TypedResourceView)},
            404,
            409,
            412,
            413,
            422,
            headers=RESOURCE_ETAG_HEADER,
        ),
        description=RESIZE_DESCRIPTION,
    ),
)
DELETE_RESOURCE_OPERATION = Resources(
    default=Operation(
        DELETE_RESOURCE, "Delete a resource", answers({204: ("Deleted; its slot is free", None)}, 404, 409)
    ),
    typed=Operation(
        DELETE_TYPED_RESOURCE,
        "Delete a resource of a type",
        answers({204: ("Deleted; its slot in the type's limit is free", None)}, 404, 409),
    ),
)

PLAN_ETAG_HEADER: dict[str, OpenAPIResponseHeader] = {
    "ETag": {
        "description": 'The plan\'s version, as a strong entity tag ("3"), for If-Match.',
        "schema": {"type": "string"},
    }
}
PLAN_OF_REQUEST = "$request.path.planId"
PUT_PLAN_OPERATION = Operation(
    PUT_PLAN,
    "Create a plan or replace its quotas (admin only)",
    answers(
        {
            200: (
                "The plan at its new version; the same quotas again change nothing (the version stays). Accounts "
                "already on the plan are given the new version by its rollout, after the answer; GET of the plan "
                "says how far it has reached (docs/plans.md)",
                PlanView,
            )
        },
        412,
        413,
        headers=PLAN_ETAG_HEADER,
        links={GET_PLAN: link(GET_PLAN, planId=PLAN_OF_REQUEST)},
    ),
)
GET_PLAN_OPERATION = Operation(
    GET_PLAN,
    "Read a plan (admin only)",
    answers(
        {200: ("The plan; ETag names its version, for If-Match", PlanView)},
        404,
        headers=PLAN_ETAG_HEADER,
        links={
            PUT_PLAN: link(PUT_PLAN, planId=PLAN_OF_REQUEST, **{"header.If-Match": "$response.header.ETag"}),
        },
    ),
)
LIST_PLANS_OPERATION = Operation(
    LIST_PLANS,
    "List the plans, a page at a time by cursor (admin only)",
    answers(
        {200: ("A page of plans in name order, and the cursor of the next", PlanPageView)},
        # The page's first plan can be read and changed (a PUT with no If-Match).
        links={
            operation_id: link(operation_id, planId="$response.body#/items/0/plan")
            for operation_id in (GET_PLAN, PUT_PLAN)
        },
    ),
    description="One Query of the plans' partition a page. Pass nextCursor on until it is null and every plan comes "
    "exactly once.",
)
LIST_ACCOUNTS_OPERATION = Operation(
    LIST_ACCOUNTS,
    "List the accounts, optionally a plan's, a page at a time by cursor (admin only)",
    answers(
        {200: ("A page of accounts and the cursor of the next", AccountPageView)},
        links={GET_ACCOUNT: link(GET_ACCOUNT, accountId="$response.body#/items/0/accountId")},
    ),
    description="Queries of the accounts index (no Scan): with `plan`, the plan's accounts by id; without, those on "
    "no plan by id, then each plan's, plans by name. Pass nextCursor on until it is null. The index is eventually "
    "consistent: an account created or moved to another plan a moment ago may be listed where it was "
    "(docs/plans.md).",
)
REMOVE_OVERRIDE_OPERATION = Operation(
    REMOVE_OVERRIDE,
    "Remove a type's override: give it its account's plan's limit again (admin only)",
    answers(
        {
            200: (
                "The type with its plan's limit (a Limit Changed event if the limit differs). Should the plan no "
                "longer give the type, it keeps its limit as the account's own",
                TypeView,
            )
        },
        404,
        headers=ETAG_HEADER,
    ),
)
DELETE_TYPE_OPERATION = Operation(
    DELETE_TYPE,
    "Delete a resource type of an account, and with deleteResources=true its resources (admin only)",
    answers(
        {
            200: (
                "removed: the type is gone; or, its resources deleted and the stream yet to count the deletes, "
                "not yet (its limit is 0 meanwhile): the same DELETE again removes it",
                TypeDeletionView,
            )
        },
        404,
        409,
    ),
    description="A type that holds resources (a periodic type: records, of any period) is refused (409 "
    "TypeNotEmpty) unless deleteResources=true; a periodic type then goes with its closed periods' records. "
    "The default type is not deletable (400 DefaultTypeNotDeletable: it goes with its account), nor a type the "
    'account\'s plan gives (409 PlanType: move the account to a plan without it). docs/api.md, "Delete a type".',
)
DELETE_ACCOUNT_OPERATION = Operation(
    DELETE_ACCOUNT,
    "Delete an account: every quota, resource, record and event of it (admin only)",
    answers(
        {
            202: (
                "Accepted: every create of the account is refused from now on (404 AccountNotFound, a replay of an "
                "Idempotency-Key too), and an Account Deleted event is announced once; its items are erased by the "
                'sweeper within the documented bound (docs/plans.md, "Lifecycle"). A repeat answers the same '
                "deletion",
                AccountDeletionView,
            )
        },
        404,
    ),
)
