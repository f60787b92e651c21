"""Resource types through the whole system over HTTP (docs/api.md, "Resource types"): each type's limit,
its resources and its exact count, which the stream consumer keeps per type; a tenant reaches every
type of its own account, nothing of another's, and sets no limit."""

from __future__ import annotations

import pytest
from hybrid_counter_client import AccountNotFound, LimitExceeded, ResourceNotFound, ResourceType

from local.http_client import poll
from local.product import new_account
from tests.integration.conftest import RunningSystem
from tests.integration.test_security import nothing_written, refused, tenant_api


def type_reaches(running_system: RunningSystem, account_id: str, resource_type: str, eventual: int) -> ResourceType:
    return poll(
        lambda: running_system.client.get_type(account_id, resource_type),
        lambda view: view.eventual == eventual,
        timeout=60,
    )


def test_each_type_is_limited_and_counted_on_its_own(running_system: RunningSystem) -> None:
    client = running_system.client
    account_id = new_account(client, prefix="types", limit=1)
    client.put_type_limit(account_id, "seats", limit=2)
    created = [client.create_typed_resource(account_id, "seats", f"s{index}") for index in range(2)]
    with pytest.raises(LimitExceeded):
        client.create_typed_resource(account_id, "seats", "s2")
    assert created[0].type == "seats"
    client.create_resource(account_id, "r")  # the default type's one slot
    type_reaches(running_system, account_id, "seats", 2)
    first = created[0].resource_id
    assert client.get_typed_resource(account_id, "seats", first) == created[0]
    with pytest.raises(ResourceNotFound):
        client.get_resource(account_id, first)
    client.delete_typed_resource(account_id, "seats", first)
    view = type_reaches(running_system, account_id, "seats", 1)
    assert (view.limit, view.available) == (2, 1)
    account = poll(lambda: client.get_account(account_id), lambda read: read.eventual == 1, timeout=60)
    assert (account.limit, account.used) == (1, 1)
    assert [(each.type, each.eventual) for each in account.types or []] == [("seats", 1)]
    listed = client.list_types(account_id).items
    assert [(each.type, each.limit) for each in listed] == [("default", 1), ("seats", 2)]


def test_a_tenant_reaches_every_type_of_its_own_account_and_sets_no_limit(running_system: RunningSystem) -> None:
    mine, theirs = (new_account(running_system.client, prefix="tsec", limit=3) for _ in range(2))
    for account_id in (mine, theirs):
        running_system.client.put_type_limit(account_id, "seats", limit=3)
    # Raw HTTP: IAM's own answers (403 "is not authorized") to a tenant's requests on paths its
    # policy does not grant, which test_security.py reads the same way.
    me = tenant_api(running_system, mine)
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
    assert running_system.client.get_type(mine, "seats").limit == 3
    with pytest.raises(AccountNotFound):
        running_system.client.get_type(mine, "more")
    nothing_written(running_system, theirs)
    assert running_system.client.get_type(theirs, "seats").best_effort == 0
