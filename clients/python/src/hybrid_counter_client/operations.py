"""The API's operations (docs/openapi.json), and each call as a value: what to send and how to read
the answer. The sync and the async client build the same calls; only how they wait differs.

Every optional argument is keyword-only, so arguments added later (a resource type, say) leave
existing callers' code as it is.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from hybrid_counter_client.errors import InvalidPathValue
from hybrid_counter_client.models import (
    Account,
    AccountDeletion,
    AccountPage,
    Admission,
    PeriodHistory,
    Plan,
    PlanPage,
    RateLimit,
    Resource,
    ResourcePage,
    ResourceType,
    TypeDeletion,
    TypedResource,
    TypedResourcePage,
    TypeList,
    decode,
)

T = TypeVar("T")

# Every path parameter of the API, as docs/openapi.json states it (a test compares the two): a
# value is refused before anything is sent unless it matches. Matching is what keeps a call on its
# own path: a value the API would take is one segment of letters, digits, `-` and `_`, never `.`
# or `..`, which the local gateway removes from a path before routing it, `%2E` included
# (docs/local-runtime.md; API Gateway's handling is not documented), so that
# `put_type_limit("acme", "..", ...)` would otherwise be `PUT /accounts/acme`.
PATH_PATTERNS: Mapping[str, str] = {
    "accountId": r"^[A-Za-z0-9_-]{1,64}$",
    "resourceType": r"^[a-z][a-z0-9-]{0,31}$",
    "resourceId": r"^[A-Za-z0-9_-]{1,64}$",
    "planId": r"^[a-z][a-z0-9-]{0,31}$",
}
# The client's name of each: the argument a caller passed it as.
ARGUMENT_NAMES: Mapping[str, str] = {
    "accountId": "account_id",
    "resourceType": "resource_type",
    "resourceId": "resource_id",
    "planId": "plan_id",
}
_COMPILED = {name: re.compile(pattern) for name, pattern in PATH_PATTERNS.items()}


def checked_path_value(name: str, value: object) -> str:
    """`value` if the API's pattern for the path parameter `name` takes it (the whole of it: JSON
    Schema's `$` is the end of the value, Python's also matches before a final newline), else
    InvalidPathValue."""
    if not isinstance(value, str) or _COMPILED[name].fullmatch(value) is None:
        raise InvalidPathValue(ARGUMENT_NAMES[name], value, PATH_PATTERNS[name])
    return value


@dataclass(frozen=True)
class Operation:
    """One operation of docs/openapi.json, and the client method that calls it."""

    operation_id: str
    method: str
    path: str  # the document's template
    success: frozenset[int]  # the statuses it answers when it succeeds
    client_method: str


GET_ACCOUNT = Operation("getAccount", "GET", "/accounts/{accountId}", frozenset({200}), "get_account")
PUT_ACCOUNT = Operation("putAccount", "PUT", "/accounts/{accountId}", frozenset({200}), "put_account")
LIST_RESOURCES = Operation(
    "listResources", "GET", "/accounts/{accountId}/resources", frozenset({200}), "list_resources_page"
)
# 201 created; 200 a replay of the same Idempotency-Key: the resource it created.
CREATE_RESOURCE = Operation(
    "createResource", "POST", "/accounts/{accountId}/resources", frozenset({200, 201}), "create_resource"
)
GET_RESOURCE = Operation(
    "getResource", "GET", "/accounts/{accountId}/resources/{resourceId}", frozenset({200}), "get_resource"
)
DELETE_RESOURCE = Operation(
    "deleteResource", "DELETE", "/accounts/{accountId}/resources/{resourceId}", frozenset({204}), "delete_resource"
)
RESIZE_RESOURCE = Operation(
    "resizeResource", "PATCH", "/accounts/{accountId}/resources/{resourceId}", frozenset({200}), "resize_resource"
)
# A type's routes (docs/api.md, "Resource types"): its limit, and its resources as the default type's.
TYPE_PATH = "/accounts/{accountId}/types/{resourceType}"
LIST_TYPES = Operation("listResourceTypes", "GET", "/accounts/{accountId}/types", frozenset({200}), "list_types")
GET_TYPE = Operation("getResourceType", "GET", TYPE_PATH, frozenset({200}), "get_type")
PUT_TYPE = Operation("putResourceType", "PUT", TYPE_PATH, frozenset({200}), "put_type_limit")
DELETE_ACCOUNT = Operation("deleteAccount", "DELETE", "/accounts/{accountId}", frozenset({202}), "delete_account")
DELETE_TYPE = Operation("deleteResourceType", "DELETE", TYPE_PATH, frozenset({200}), "delete_type")
LIST_TYPED_RESOURCES = Operation(
    "listTypedResources", "GET", f"{TYPE_PATH}/resources", frozenset({200}), "list_typed_resources_page"
)
CREATE_TYPED_RESOURCE = Operation(
    "createTypedResource", "POST", f"{TYPE_PATH}/resources", frozenset({200, 201}), "create_typed_resource"
)
GET_TYPED_RESOURCE = Operation(
    "getTypedResource", "GET", f"{TYPE_PATH}/resources/{{resourceId}}", frozenset({200}), "get_typed_resource"
)
DELETE_TYPED_RESOURCE = Operation(
    "deleteTypedResource", "DELETE", f"{TYPE_PATH}/resources/{{resourceId}}", frozenset({204}), "delete_typed_resource"
)
RESIZE_TYPED_RESOURCE = Operation(
    "resizeTypedResource", "PATCH", f"{TYPE_PATH}/resources/{{resourceId}}", frozenset({200}), "resize_typed_resource"
)
# Would a create be admitted now (advisory): the account's default type, or a type.
GET_ADMISSION = Operation("getAdmission", "GET", "/accounts/{accountId}/admission", frozenset({200}), "would_admit")
GET_TYPED_ADMISSION = Operation(
    "getTypedAdmission", "GET", f"{TYPE_PATH}/admission", frozenset({200}), "would_admit_typed"
)
# A periodic quota's totals, period by period: the account's default type, or a type.
GET_HISTORY = Operation("getPeriodHistory", "GET", "/accounts/{accountId}/history", frozenset({200}), "period_history")
GET_TYPED_HISTORY = Operation(
    "getTypedPeriodHistory", "GET", f"{TYPE_PATH}/history", frozenset({200}), "typed_period_history"
)
# A type's override of its account's plan, and the plans (docs/plans.md).
REMOVE_OVERRIDE = Operation("removeOverride", "DELETE", f"{TYPE_PATH}/override", frozenset({200}), "remove_override")
PUT_PLAN = Operation("putPlan", "PUT", "/plans/{planId}", frozenset({200}), "put_plan")
GET_PLAN = Operation("getPlan", "GET", "/plans/{planId}", frozenset({200}), "get_plan")
LIST_PLANS = Operation("listPlans", "GET", "/plans", frozenset({200}), "list_plans_page")
# The account registry: every account, or a plan's (docs/plans.md).
LIST_ACCOUNTS = Operation("listAccounts", "GET", "/accounts", frozenset({200}), "list_accounts_page")
OPERATIONS = (
    GET_ACCOUNT,
    PUT_ACCOUNT,
    DELETE_ACCOUNT,
    LIST_RESOURCES,
    CREATE_RESOURCE,
    GET_RESOURCE,
    DELETE_RESOURCE,
    RESIZE_RESOURCE,
    LIST_TYPES,
    GET_TYPE,
    PUT_TYPE,
    DELETE_TYPE,
    LIST_TYPED_RESOURCES,
    CREATE_TYPED_RESOURCE,
    GET_TYPED_RESOURCE,
    DELETE_TYPED_RESOURCE,
    RESIZE_TYPED_RESOURCE,
    GET_ADMISSION,
    GET_TYPED_ADMISSION,
    GET_HISTORY,
    GET_TYPED_HISTORY,
    REMOVE_OVERRIDE,
    PUT_PLAN,
    GET_PLAN,
    LIST_PLANS,
    LIST_ACCOUNTS,
)


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: its status, headers (names in lower case) and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class Call(Generic[T]):
    """One call: the request every attempt sends (signed anew each time), and its result's reader.
    `when_gone`: the result when the call is answered ResourceNotFound after an attempt that may
    have landed (a delete whose first attempt deleted); None: that answer is an error."""

    operation: Operation
    path_parameters: Mapping[str, str]
    read: Callable[[Answer], T]
    query: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None
    when_gone: Callable[[], T] | None = None

    def __post_init__(self) -> None:
        # Made before the first attempt: a value the API would not take is refused here, with
        # nothing sent.
        for name, value in self.path_parameters.items():
            checked_path_value(name, value)

    @property
    def path(self) -> str:
        # Each value matched its pattern (__post_init__); quoted all the same, as one segment.
        segments = {name: quote(value, safe="") for name, value in self.path_parameters.items()}
        return self.operation.path.format_map(segments)


def _json_body(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode()


def _account(answer: Answer) -> Account:
    return decode(Account, answer.json(), answer.headers)


def _resource(answer: Answer) -> Resource:
    return decode(Resource, answer.json(), answer.headers)


def _page(answer: Answer) -> ResourcePage:
    return decode(ResourcePage, answer.json())


def _nothing(answer: Answer) -> None:
    return None


def _decoder(model: type[T]) -> Callable[[Answer], T]:
    """An answer's reader: its body (and header fields) as `model`."""
    return lambda answer: decode(model, answer.json(), answer.headers)


def get_account(account_id: str) -> Call[Account]:
    return Call(GET_ACCOUNT, {"accountId": account_id}, _account)


def _put_headers(if_match: str | None, idempotency_key: str | None) -> dict[str, str]:
    """A PUT's (or a resize's) headers. Its key is made once per call, here, so that every attempt
    of the call sends it: the API then takes a retry for the first attempt, and a retry never
    overwrites a PUT another caller made after that attempt (docs/admission.md, "Limit changes")."""
    headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
    return headers if if_match is None else {**headers, "If-Match": if_match}


def _quota_settings(thresholds: Sequence[int] | None, period: str | None, anchor: str | None) -> dict[str, Any]:
    """A PUT's optional quota settings, each only when given: left out, the quota keeps what it has
    (and the body is the one a client before thresholds or periods sent). The API checks them
    (400 ValidationError: an unknown period, an anchor that is not RFC 3339 or has no period)."""
    given = {"thresholds": None if thresholds is None else list(thresholds), "period": period, "anchor": anchor}
    return {name: value for name, value in given.items() if value is not None}


def put_account(
    account_id: str,
    limit: int | None,
    rate_limit: RateLimit | None,
    thresholds: Sequence[int] | None,
    if_match: str | None,
    idempotency_key: str | None = None,
    *,
    period: str | None = None,
    anchor: str | None = None,
    plan: str | None = None,
    mode: str | None = None,
) -> Call[Account]:
    """The account's own limit, or (`plan`, which the API takes alone: ValidationError with any
    other setting) the plan it is put on. Each is sent as given, so the API judges the body."""
    given = {"limit": limit, "plan": plan, "mode": mode}
    body: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
    if rate_limit is not None:
        body["rateLimit"] = rate_limit.to_json()
    body |= _quota_settings(thresholds, period, anchor)
    headers = _put_headers(if_match, idempotency_key)
    return Call(PUT_ACCOUNT, {"accountId": account_id}, _account, headers=headers, body=_json_body(body))


def list_resources_page(account_id: str, limit: int | None, cursor: str | None) -> Call[ResourcePage]:
    query = {name: str(value) for name, value in (("limit", limit), ("cursor", cursor)) if value is not None}
    return Call(LIST_RESOURCES, {"accountId": account_id}, _page, query=query)


def _creation(
    name: str, attributes: Mapping[str, Any] | None, idempotency_key: str | None, amount: int | None = None
) -> dict[str, Any]:
    """A create's headers and body. The key is made once per call, here, so that every attempt of
    the call sends it. Without an amount, the body is the one a client before amounts sent (the API
    takes 1)."""
    body: dict[str, Any] = {"name": name}
    if attributes is not None:
        body["attributes"] = dict(attributes)
    if amount is not None:
        body["amount"] = amount
    return {"headers": {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}, "body": _json_body(body)}


def create_resource(
    account_id: str,
    name: str,
    attributes: Mapping[str, Any] | None,
    idempotency_key: str | None,
    amount: int | None = None,
) -> Call[Resource]:
    creation = _creation(name, attributes, idempotency_key, amount)
    return Call(CREATE_RESOURCE, {"accountId": account_id}, _resource, **creation)


def get_resource(account_id: str, resource_id: str) -> Call[Resource]:
    return Call(GET_RESOURCE, {"accountId": account_id, "resourceId": resource_id}, _resource)


def resize_resource(
    account_id: str, resource_id: str, amount: int, if_match: str | None, idempotency_key: str
) -> Call[Resource]:
    """One resize as sent: `if_match` and `idempotency_key` the same on every attempt (the client
    makes the key once per resize, retries.py's `resize_again` says when it reads and sends again)."""
    headers = _put_headers(if_match, idempotency_key)
    where = {"accountId": account_id, "resourceId": resource_id}
    body = _json_body({"amount": amount})
    return Call(RESIZE_RESOURCE, where, _resource, headers=headers, body=body)


def delete_resource(account_id: str, resource_id: str) -> Call[None]:
    return Call(DELETE_RESOURCE, {"accountId": account_id, "resourceId": resource_id}, _nothing, when_gone=lambda: None)


def list_types(account_id: str) -> Call[TypeList]:
    return Call(LIST_TYPES, {"accountId": account_id}, _decoder(TypeList))


def get_type(account_id: str, resource_type: str) -> Call[ResourceType]:
    return Call(GET_TYPE, {"accountId": account_id, "resourceType": resource_type}, _decoder(ResourceType))


def put_type_limit(
    account_id: str,
    resource_type: str,
    limit: int,
    thresholds: Sequence[int] | None,
    if_match: str | None,
    idempotency_key: str | None = None,
    *,
    period: str | None = None,
    anchor: str | None = None,
    expires_at: str | None = None,
    mode: str | None = None,
) -> Call[ResourceType]:
    headers = _put_headers(if_match, idempotency_key)
    where = {"accountId": account_id, "resourceType": resource_type}
    body: dict[str, Any] = {"limit": limit, **_quota_settings(thresholds, period, anchor)}
    if expires_at is not None:
        body["expiresAt"] = expires_at
    if mode is not None:  # omitted, the body is the one a client before shadow mode sent
        body["mode"] = mode
    return Call(PUT_TYPE, where, _decoder(ResourceType), headers=headers, body=_json_body(body))


def list_typed_resources_page(
    account_id: str, resource_type: str, limit: int | None, cursor: str | None
) -> Call[TypedResourcePage]:
    query = {name: str(value) for name, value in (("limit", limit), ("cursor", cursor)) if value is not None}
    where = {"accountId": account_id, "resourceType": resource_type}
    return Call(LIST_TYPED_RESOURCES, where, _decoder(TypedResourcePage), query=query)


def create_typed_resource(
    account_id: str,
    resource_type: str,
    name: str,
    attributes: Mapping[str, Any] | None,
    idempotency_key: str | None,
    amount: int | None = None,
) -> Call[TypedResource]:
    where = {"accountId": account_id, "resourceType": resource_type}
    creation = _creation(name, attributes, idempotency_key, amount)
    return Call(CREATE_TYPED_RESOURCE, where, _decoder(TypedResource), **creation)


def get_typed_resource(account_id: str, resource_type: str, resource_id: str) -> Call[TypedResource]:
    where = {"accountId": account_id, "resourceType": resource_type, "resourceId": resource_id}
    return Call(GET_TYPED_RESOURCE, where, _decoder(TypedResource))


def resize_typed_resource(
    account_id: str, resource_type: str, resource_id: str, amount: int, if_match: str | None, idempotency_key: str
) -> Call[TypedResource]:
    where = {"accountId": account_id, "resourceType": resource_type, "resourceId": resource_id}
    headers = _put_headers(if_match, idempotency_key)
    body = _json_body({"amount": amount})
    return Call(RESIZE_TYPED_RESOURCE, where, _decoder(TypedResource), headers=headers, body=body)


def delete_typed_resource(account_id: str, resource_type: str, resource_id: str) -> Call[None]:
    where = {"accountId": account_id, "resourceType": resource_type, "resourceId": resource_id}
    return Call(DELETE_TYPED_RESOURCE, where, _nothing, when_gone=lambda: None)


def _asked(amount: int | None) -> dict[str, str]:
    """The admission read's query: without an amount, the API asks about 1."""
    return {} if amount is None else {"amount": str(amount)}


def would_admit(account_id: str, amount: int | None) -> Call[Admission]:
    return Call(GET_ADMISSION, {"accountId": account_id}, _decoder(Admission), query=_asked(amount))


def would_admit_typed(account_id: str, resource_type: str, amount: int | None) -> Call[Admission]:
    where = {"accountId": account_id, "resourceType": resource_type}
    return Call(GET_TYPED_ADMISSION, where, _decoder(Admission), query=_asked(amount))


def _periods(periods: int | None) -> dict[str, str]:
    """The history's query: without a count, the API answers its default (2 periods)."""
    return {} if periods is None else {"periods": str(periods)}


def period_history(account_id: str, periods: int | None) -> Call[PeriodHistory]:
    return Call(GET_HISTORY, {"accountId": account_id}, _decoder(PeriodHistory), query=_periods(periods))


def typed_period_history(account_id: str, resource_type: str, periods: int | None) -> Call[PeriodHistory]:
    where = {"accountId": account_id, "resourceType": resource_type}
    return Call(GET_TYPED_HISTORY, where, _decoder(PeriodHistory), query=_periods(periods))


def delete_account(account_id: str) -> Call[AccountDeletion]:
    return Call(DELETE_ACCOUNT, {"accountId": account_id}, _decoder(AccountDeletion))


def delete_type(account_id: str, resource_type: str, delete_resources: bool | None) -> Call[TypeDeletion]:
    where = {"accountId": account_id, "resourceType": resource_type}
    query = {} if delete_resources is None else {"deleteResources": str(delete_resources).lower()}
    return Call(DELETE_TYPE, where, _decoder(TypeDeletion), query=query)


def remove_override(account_id: str, resource_type: str) -> Call[ResourceType]:
    where = {"accountId": account_id, "resourceType": resource_type}
    return Call(REMOVE_OVERRIDE, where, _decoder(ResourceType))


def _plan_quota(quota: Any) -> dict[str, Any]:
    """A plan's quota as the API takes it: a mapping as given, or a PlanQuota-like object's `to_json()`."""
    return dict(quota.to_json() if hasattr(quota, "to_json") else quota)


def put_plan(plan_id: str, quotas: Mapping[str, Any], if_match: str | None) -> Call[Plan]:
    body = _json_body({"quotas": {name: _plan_quota(quota) for name, quota in quotas.items()}})
    headers = {} if if_match is None else {"If-Match": if_match}
    return Call(PUT_PLAN, {"planId": plan_id}, _decoder(Plan), headers=headers, body=body)


def get_plan(plan_id: str) -> Call[Plan]:
    return Call(GET_PLAN, {"planId": plan_id}, _decoder(Plan))


def list_plans_page(limit: int | None, cursor: str | None) -> Call[PlanPage]:
    query = {name: str(value) for name, value in (("limit", limit), ("cursor", cursor)) if value is not None}
    return Call(LIST_PLANS, {}, _decoder(PlanPage), query=query)


def list_accounts_page(plan: str | None, limit: int | None, cursor: str | None) -> Call[AccountPage]:
    given = (("plan", plan), ("limit", limit), ("cursor", cursor))
    query = {name: str(value) for name, value in given if value is not None}
    return Call(LIST_ACCOUNTS, {}, _decoder(AccountPage), query=query)
