"""The router (functions/api/router.py): a table of routes, each declared once, registered on a
resolver of its own: a resources operation in both families, the default one's bound to the
default type, and every other method of each path answered 405."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response

from functions.api import gate, router
from functions.api.contract import Operation, Resources, ResourceType
from functions.core.model import DEFAULT_RESOURCE_TYPE, Quota
from tests.support.api_events import proxy_event
from tests.support.lambda_context import FakeLambdaContext

SEEN = Resources(default=Operation("seen", "s", {}), typed=Operation("seenTyped", "s", {}))


def seen(family: router.Family, accountId: str, resourceType: ResourceType) -> Response[str]:
    url = family.url(Quota(accountId, resourceType))
    body = {"account": accountId, "type": resourceType, "typed": family.typed, "url": url}
    return Response(status_code=200, body=json.dumps(body))


@gate.exempt_from_tenant_rate
def admin(family: router.Family, accountId: str, resourceType: ResourceType) -> Response[str]:
    return Response(status_code=200, body="")


app = APIGatewayRestResolver()
router.register(
    app,
    (
        ("GET", router.RESOURCES_PATH, SEEN, seen),
        ("PUT", router.RESOURCES_PATH, SEEN, admin),
        ("GET", router.ACCOUNT_PATH, Operation("account", "a", {}), lambda accountId: Response(200, body="")),
    ),
)


def answer(method: str, path: str) -> dict[str, Any]:
    return app.resolve(proxy_event(method, path, received_ms=0), FakeLambdaContext())


def test_the_default_family_binds_the_default_type_and_the_typed_one_passes_its_own() -> None:
    assert json.loads(answer("GET", "/accounts/a/resources")["body"]) == {
        "account": "a",
        "type": DEFAULT_RESOURCE_TYPE,
        "typed": False,
        "url": "/accounts/a/resources",
    }
    assert json.loads(answer("GET", "/accounts/a/types/docs/resources")["body"]) == {
        "account": "a",
        "type": "docs",
        "typed": True,
        "url": "/accounts/a/types/docs/resources",
    }


def test_the_default_family_has_no_type_parameter() -> None:
    for route in app._dynamic_routes:
        names = {parameter.name for parameter in route.dependant.path_params + route.dependant.query_params}
        assert ("resourceType" in names) == ("<resourceType>" in route.openapi_path.replace("{", "<").replace("}", ">"))
        assert "family" not in names


def test_every_other_method_of_a_path_in_the_table_is_405_with_what_it_takes() -> None:
    refused = answer("DELETE", "/accounts/a/types/docs/resources")
    assert (refused["statusCode"], refused["multiValueHeaders"]["Allow"]) == (405, ["GET, PUT"])
    assert answer("POST", "/accounts/a")["multiValueHeaders"]["Allow"] == ["GET"]


def test_an_exempt_operation_is_exempt_in_both_families() -> None:
    rates = {
        (route.method, route.openapi_path): gate.counted_account(route, {"accountId": "a"})
        for route in app._dynamic_routes
        if route.method in ("GET", "PUT") and route.openapi_path.endswith("/resources")
    }
    assert rates == {
        ("GET", "/accounts/{accountId}/resources"): "a",
        ("GET", "/accounts/{accountId}/types/{resourceType}/resources"): "a",
        ("PUT", "/accounts/{accountId}/resources"): None,
        ("PUT", "/accounts/{accountId}/types/{resourceType}/resources"): None,
    }
