"""The routes of an account's resource types (docs/api.md, "Resource types"; docs/openapi.json) through
the real api handler: each type's limit, resources and answers on their own; every route without a
type answering exactly as it did before types."""

from __future__ import annotations

import pytest

from tests.handler.conftest import Harness

ACME_SEATS = "/accounts/acme/types/seats"
RATE = {"requestsPerSecond": 1000, "burstSeconds": 2}


def type_view(resource_type: str, limit: int, best_effort: int = 0, eventual: int = 0) -> dict[str, object]:
    used = max(best_effort, eventual)
    return {
        "accountId": "acme",
        "type": resource_type,
        "limit": limit,
        "limitSource": "account",  # set by its own PUT, on an account without a plan (docs/plans.md)
        "mode": "enforce",  # as every quota before shadow mode (docs/plans.md)
        "bestEffort": best_effort,
        "eventual": eventual,
        "used": used,
        "available": max(0, limit - used),
    }


def test_a_type_is_put_and_read_with_an_etag_of_its_own(harness: Harness) -> None:
    api = harness.api
    assert api.put_account("acme", 3).headers["ETag"] == '"1"'
    put = api.put_type("acme", "seats", 5)
    assert (put.status, put.headers["ETag"], put.json()) == (200, '"1"', type_view("seats", 5))
    assert api.put_type("acme", "seats", 6).headers["ETag"] == '"2"'
    read = api.request("GET", ACME_SEATS)
    assert (read.status, read.headers["ETag"], read.json()) == (200, '"2"', type_view("seats", 6))
    # If-Match names the type's own version: the account's ETag is "1", the type's "2".
    stale = api.request("PUT", ACME_SEATS, {"limit": 9}, headers={"If-Match": '"1"'})
    assert (stale.status, stale.json()["error"]["code"]) == (412, "PreconditionFailed")
    assert api.request("PUT", ACME_SEATS, {"limit": 9}, headers={"If-Match": '"2"'}).json()["limit"] == 9
    assert api.request("GET", "/accounts/acme").headers["ETag"] == '"1"'


def test_the_default_type_is_the_account_under_its_type_routes(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 3)
    read = api.request("GET", "/accounts/acme/types/default")
    assert (read.headers["ETag"], read.json()) == ('"1"', type_view("default", 3))
    assert api.put_type("acme", "default", 4).headers["ETag"] == '"2"'
    assert api.account("acme")["limit"] == 4
    created = api.create("acme", "vm", resource_type="default").json()
    assert created["type"] == "default"
    # The same resource on the routes without a type, answered as it always was.
    plain = api.request("GET", f"/accounts/acme/resources/{created['resourceId']}").json()
    assert plain == {key: value for key, value in created.items() if key != "type"}


def test_an_account_without_other_types_answers_exactly_as_before(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 3)
    assert api.account("acme") == {
        "accountId": "acme",
        "limit": 3,
        "limitSource": "account",  # the two fields plans added (docs/plans.md)
        "mode": "enforce",
        "bestEffort": 0,
        "eventual": 0,
        "used": 0,
        "available": 3,
        "rateLimit": RATE,
    }
    created = api.create("acme", "vm", size=1).json()
    assert set(created) == {"accountId", "resourceId", "name", "attributes", "createdAt"}
    listed = api.request("GET", "/accounts/acme/resources").json()
    assert set(listed["items"][0]) == set(created)


def test_the_account_shows_every_type_and_the_list_of_types_names_them_all(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 3)
    api.put_type("acme", "seats", 5)
    api.put_type("acme", "projects", 2)
    api.create("acme", resource_type="seats")
    account = api.account("acme")
    assert account.pop("types") == [type_view("projects", 2), type_view("seats", 5, best_effort=1)]
    assert account["limit"] == 3
    types = api.request("GET", "/accounts/acme/types")
    assert types.status == 200
    assert types.json() == {
        "items": [type_view("default", 3), type_view("projects", 2), type_view("seats", 5, best_effort=1)]
    }


def test_a_types_first_put_creates_the_account_at_limit_zero(harness: Harness) -> None:
    api = harness.api
    assert api.put_type("acme", "seats", 5).status == 200
    account = api.account("acme")
    assert (account["limit"], [view["type"] for view in account["types"]]) == (0, ["seats"])
    assert api.create("acme").status == 409  # the default type's limit is 0


def test_each_type_admits_up_to_its_own_limit(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 1)
    api.put_type("acme", "seats", 2)
    assert [api.create("acme", resource_type="seats").status for _ in range(3)] == [201, 201, 409]
    refused = api.create("acme", resource_type="seats").json()["error"]
    assert (refused["code"], refused["message"]) == (
        "LimitExceeded",
        "account 'acme' has reached its limit of 2 resources of type 'seats'",
    )
    assert [api.create("acme").status for _ in range(2)] == [201, 409]


def test_a_typed_resource_lives_under_its_type_only(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 3)
    api.put_type("acme", "seats", 3)
    api.put_type("acme", "projects", 3)
    created = api.create("acme", "alice", resource_type="seats", role="admin")
    assert created.status == 201
    body = created.json()
    assert body["type"] == "seats"
    assert body["attributes"] == {"role": "admin"}
    url = f"{ACME_SEATS}/resources/{body['resourceId']}"
    assert created.headers["Location"] == url
    assert api.request("GET", url).json() == body
    # Neither the default type nor a sibling type holds it.
    for other in (
        f"/accounts/acme/resources/{body['resourceId']}",
        f"/accounts/acme/types/projects/resources/{body['resourceId']}",
    ):
        assert api.request("GET", other).status == 404
        assert api.request("DELETE", other).status == 404
    listed = api.request("GET", f"{ACME_SEATS}/resources").json()
    assert listed == {"items": [body], "nextCursor": None}
    assert api.request("GET", "/accounts/acme/resources").json()["items"] == []
    assert api.delete("acme", body["resourceId"], resource_type="seats").status == 204
    assert api.request("GET", url).status == 404


def test_the_same_idempotency_key_on_two_types_is_two_requests(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 3)
    api.put_type("acme", "seats", 3)
    first = api.create("acme", "x", key="k1")
    seats = api.create("acme", "x", key="k1", resource_type="seats")
    assert (first.status, seats.status) == (201, 201)
    assert first.json()["resourceId"] != seats.json()["resourceId"]
    replay = api.create("acme", "x", key="k1", resource_type="seats")
    assert (replay.status, replay.json()) == (200, seats.json())


def test_a_type_without_a_limit_is_not_found(harness: Harness) -> None:
    api = harness.api
    api.put_account("acme", 3)
    for response in (
        api.request("GET", ACME_SEATS),
        api.create("acme", resource_type="seats"),
        api.request("GET", f"{ACME_SEATS}/resources"),
    ):
        error = response.json()["error"]
        assert (response.status, error["code"]) == (404, "AccountNotFound")
        assert error["message"] == "account 'acme' has no limit of type 'seats'"
    assert api.request("GET", f"{ACME_SEATS}/resources/r1").status == 404


@pytest.mark.parametrize("resource_type", ["Seats", "1seats", "a" * 33, "se_ats", "seats%23x"])
def test_a_type_outside_the_pattern_is_refused_and_writes_nothing(harness: Harness, resource_type: str) -> None:
    api = harness.api
    response = api.put_type("acme", resource_type, 5)
    assert (response.status, response.json()["error"]["code"]) == (400, "ValidationError")
    assert api.create("acme", resource_type=resource_type).status == 400
    assert api.request("GET", "/accounts/acme").status == 404


def test_a_put_of_a_type_takes_only_a_limit(harness: Harness) -> None:
    response = harness.api.request("PUT", ACME_SEATS, {"limit": 5, "rateLimit": RATE})
    assert (response.status, response.json()["error"]["code"]) == (400, "ValidationError")


def test_too_many_types_is_a_conflict_naming_the_most(harness: Harness) -> None:
    api = harness.api
    for number in range(50):
        assert api.put_type("acme", f"t{number}", 1).status == 200
    refused = api.put_type("acme", "seats", 1)
    assert (refused.status, refused.json()["error"]["code"]) == (409, "TooManyResourceTypes")
    assert "50" in refused.json()["error"]["message"]
    assert len(api.request("GET", "/accounts/acme/types").json()["items"]) == 51


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/accounts/acme/types", "GET"),
        ("POST", ACME_SEATS, "DELETE, GET, PUT"),
        ("PUT", f"{ACME_SEATS}/resources", "GET, POST"),
        ("POST", f"{ACME_SEATS}/resources/r1", "DELETE, GET, PATCH"),
    ],
)
def test_a_method_a_type_route_does_not_take_is_405(harness: Harness, method: str, path: str, allow: str) -> None:
    response = harness.api.request(method, path)
    assert (response.status, response.headers["Allow"]) == (405, allow)
