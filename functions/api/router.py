"""How the API's table of routes (functions/api/handler.py, ROUTES) becomes Powertools' routes.

A row names its method, its path, its contract (functions/api/contract.py) and the function that
answers it. An operation on a quota's resources (or its admission, or its history) is routed in each family: below
the account's path, where its quota is the default type's, and below a type's path; one function
answers both. Every path
the table has answers its other methods 405.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response

from functions.api import errors
from functions.api.contract import Operation, Resources
from functions.api.models import ResourcePage, ResourceView, TypedResourcePage, TypedResourceView
from functions.core.model import DEFAULT_RESOURCE_TYPE, Quota

ACCOUNTS_PATH = "/accounts"
ACCOUNT_PATH = f"{ACCOUNTS_PATH}/<accountId>"
TYPES_PATH = f"{ACCOUNT_PATH}/types"
TYPE_PATH = f"{TYPES_PATH}/<resourceType>"
# A resources operation's paths, below its quota's: the account's or one of its types'.
RESOURCES_PATH = "{quota}/resources"
RESOURCE_PATH = "{quota}/resources/<resourceId>"
ADMISSION_PATH = "{quota}/admission"
HISTORY_PATH = "{quota}/history"
# A type's override of its account's plan (docs/plans.md), and the plans themselves.
OVERRIDE_PATH = f"{TYPE_PATH}/override"
PLANS_PATH = "/plans"
PLAN_PATH = f"{PLANS_PATH}/<planId>"


@dataclass(frozen=True)
class Family:
    """Where a resources operation is routed: below the account's path, whose quota is the default
    type's and whose answers name no type, or below a type's, whose answers name it."""

    quota_path: str
    view: type[ResourceView]
    page: Callable[..., ResourcePage | TypedResourcePage]

    @property
    def typed(self) -> bool:
        return "<resourceType>" in self.quota_path

    def path(self, template: str) -> str:
        return template.format(quota=self.quota_path)

    def url(self, quota: Quota) -> str:
        """The path of the quota's resources, as a Location names it."""
        path = self.path(RESOURCES_PATH).replace("<accountId>", quota.account_id)
        return path.replace("<resourceType>", quota.resource_type)


FAMILIES = (Family(ACCOUNT_PATH, ResourceView, ResourcePage), Family(TYPE_PATH, TypedResourceView, TypedResourcePage))


Route = tuple[str, str, Operation | Resources, Callable[..., Response[str]]]


def in_family(family: Family, operation: Callable[..., Response[str]]) -> Callable[..., Response[str]]:
    """`operation` as `family`'s route. Powertools reads a route's parameters from its signature
    (path, query, header, body): the route's drops `family`, and on the default type's paths, which
    name no type, `resourceType`, which it binds to the default type. Its annotations are resolved
    where `operation` is written, as Powertools would resolve them there."""
    signature = inspect.signature(operation, eval_str=True)
    dropped = {"family"} if family.typed else {"family", "resourceType"}

    def route(**arguments: Any) -> Response[str]:
        return operation(family, **{"resourceType": DEFAULT_RESOURCE_TYPE, **arguments})

    route.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[parameter for name, parameter in signature.parameters.items() if name not in dropped]
    )
    route.__name__ = route.__qualname__ = f"{operation.__name__}_in_{'a_type' if family.typed else 'the_account'}"
    route.__wrapped__ = operation  # type: ignore[attr-defined]  # what the gate knows it by
    return route


# A path the API has, with a method it does not take: 405 and the methods it does (RFC 9110,
# 15.5.6). API Gateway's proxy resource (ANY) passes the function every method API Gateway takes;
# a path the API does not have is 404 RouteNotFound (functions/api/errors.py).
GATEWAY_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def method_not_allowed(app: APIGatewayRestResolver, path: str, taken: Sequence[str]) -> Callable[..., Response[str]]:
    """The route of `path`'s other methods; its signature names the path's parameters, as a route's."""

    def refuse(**path_parameters: str) -> Response[str]:
        event = app.current_event
        return errors.error_response(
            HTTPStatus.METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            f"{event.path} takes {', '.join(taken)}, not {event.http_method}",
            headers={"Allow": ", ".join(taken)},
            request_id=event.request_context.request_id,
        )

    names = PATH_PARAMETER.findall(path)
    parameters = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=str) for name in names]
    refuse.__signature__ = inspect.Signature(parameters, return_annotation=Response[str])  # type: ignore[attr-defined]
    return refuse


PATH_PARAMETER = re.compile(r"<(\w+)>")


def register(app: APIGatewayRestResolver, routes: Sequence[Route]) -> None:
    """Every row of `routes` on its path (a resources operation's on each family's), then each path's
    other methods, answered 405."""
    allowed: dict[str, list[str]] = {}
    for method, path, contract, operation in routes:
        if isinstance(contract, Resources):
            for family in FAMILIES:
                family_path = family.path(path)
                app.route(family_path, method, **contract.of(family.typed).route())(in_family(family, operation))
                allowed.setdefault(family_path, []).append(method)
        else:
            app.route(path, method, **contract.route())(operation)
            allowed.setdefault(path, []).append(method)
    for path, methods in allowed.items():
        taken = sorted(methods)
        others = [method for method in GATEWAY_METHODS if method not in taken]
        app.route(path, others, include_in_schema=False)(method_not_allowed(app, path, taken))
