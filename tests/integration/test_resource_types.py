"""Resource types through the whole system over HTTP (docs/api.md, "Resource types"): each type's limit,
its resources and its exact count, which the stream consumer keeps per type; a tenant reaches every
type of its own account, nothing of another's, and sets no limit."""

from __future__ import annotations

from typing import Any

from local.http_client import poll
from tests.integration.conftest import System
from tests.integration.test_security import nothing_written, refused, tenant_api


def type_reaches(system: System, account_id: str, resource_type: str, eventual: int) -> dict[str, Any]:
    url = f"/accounts/{account_id}/types/{resource_type}"
    return poll(lambda: system.api.request("GET", url).body, lambda view: view["eventual"] == eventual, timeout=60)


def test_each_type_is_limited_and_counted_on_its_own(system: System) -> None:
    api = system.api
    account_id = api.new_account(prefix="types", limit=1)
    assert api.request("PUT", f"/accounts/{account_id}/types/seats", {"limit": 2}).status == 200
    seats = f"/accounts/{account_id}/types/seats/resources"
    created = [api.request("POST", seats, {"name": f"s{index}"}) for index in range(3)]
    assert [reply.status for reply in created] == [201, 201, 409]
    assert created[0].body["type"] == "seats"
    assert api.create(account_id).status == 201  # the default type's one slot
    type_reaches(system, account_id, "seats", 2)
    first = created[0].body["resourceId"]
    assert api.request("GET", f"{seats}/{first}").body == created[0].body
    assert api.request("GET", f"/accounts/{account_id}/resources/{first}").status == 404
    assert api.request("DELETE", f"{seats}/{first}").status == 204
    view = type_reaches(system, account_id, "seats", 1)
    assert (view["limit"], view["available"]) == (2, 1)
    account = poll(lambda: api.account(account_id), lambda read: read["eventual"] == 1, timeout=60)
    assert (account["limit"], account["used"]) == (1, 1)
    assert [(each["type"], each["eventual"]) for each in account["types"]] == [("seats", 1)]
    listed = api.request("GET", f"/accounts/{account_id}/types").body["items"]
    assert [(each["type"], each["limit"]) for each in listed] == [("default", 1), ("seats", 2)]


def test_a_tenant_reaches_every_type_of_its_own_account_and_sets_no_limit(system: System) -> None:
    mine, theirs = (system.api.new_account(prefix="tsec", limit=3) for _ in range(2))
    for account_id in (mine, theirs):
        assert system.api.request("PUT", f"/accounts/{account_id}/types/seats", {"limit": 3}).status == 200
    me = tenant_api(system, mine)
    created = me.request("POST", f"/accounts/{mine}/types/seats/resources", {"name": "alice"})
    assert created.status == 201
    url = f"/accounts/{mine}/types/seats/resources/{created.body['resourceId']}"
    assert me.request("GET", url).status == 200
    assert me.request("GET", f"/accounts/{mine}/types/seats").status == 200
    assert me.request("GET", f"/accounts/{mine}/types").status == 200
    assert me.request("GET", f"/accounts/{mine}/types/seats/resources").status == 200
    assert me.request("DELETE", url).status == 204
    refused(me.request("PUT", f"/accounts/{mine}/types/seats", {"limit": 1000}), "is not authorized")
    refused(me.request("PUT", f"/accounts/{mine}/types/more", {"limit": 1000}), "is not authorized")
    refused(me.request("POST", f"/accounts/{theirs}/types/seats/resources", {"name": "x"}), "is not authorized")
    refused(me.request("GET", f"/accounts/{theirs}/types/seats"), "is not authorized")
    refused(me.request("GET", f"/accounts/{theirs}/types"), "is not authorized")
    assert system.api.request("GET", f"/accounts/{mine}/types/seats").body["limit"] == 3
    assert system.api.request("GET", f"/accounts/{mine}/types/more").status == 404
    nothing_written(system, theirs)
    assert system.api.request("GET", f"/accounts/{theirs}/types/seats").body["bestEffort"] == 0
