"""Plans (docs/plans.md): a plan's PUT, GET and list; an account put on a plan, each of its quotas
set through a type's limit-setting path, its membership last; overrides, and their removal.
Through the real handler and the table's conditions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from functions.core.model import Quota
from tests.handler.conftest import Harness
from tests.support.api_events import ApiResponse
from tests.support.faults import Faults

PRO = {
    "quotas": {
        "seats": {"limit": 50},
        "projects": {"limit": 10, "thresholds": [50, 90]},
        "builds": {"limit": 1000, "period": "month"},
    }
}
FREE = {"quotas": {"seats": {"limit": 3}, "projects": {"limit": 1}}}


def put_plan(harness: Harness, name: str, body: Any, if_match: str | None = None) -> ApiResponse:
    headers = {"If-Match": if_match} if if_match is not None else None
    return harness.api.request("PUT", f"/plans/{name}", body, headers)


def join(harness: Harness, account: str, plan: str, received_ms: int | None = None) -> ApiResponse:
    return harness.api.request("PUT", f"/accounts/{account}", {"plan": plan}, None, received_ms)


def types_of(answer: dict[str, Any]) -> dict[str, tuple[int, str]]:
    return {t["type"]: (t["limit"], t["limitSource"]) for t in answer.get("types", [])}


def test_a_plan_is_put_read_and_versioned(harness: Harness) -> None:
    created = put_plan(harness, "pro", PRO)
    assert (created.status, created.headers["ETag"]) == (200, '"1"'), created.text
    assert created.json() == {
        "plan": "pro",
        "version": 1,
        "quotas": {
            "builds": {"limit": 1000, "period": "month"},
            "projects": {"limit": 10, "thresholds": [50, 90]},
            "seats": {"limit": 50},
        },
    }
    read = harness.api.request("GET", "/plans/pro")
    rollout = {"version": 1, "accounts": 0, "updated": 0}  # the plan's GET only (docs/plans.md)
    assert (read.status, read.headers["ETag"], read.json()) == (200, '"1"', {**created.json(), "rollout": rollout})
    assert put_plan(harness, "pro", PRO).headers["ETag"] == '"1"'  # the same quotas: nothing changes
    assert put_plan(harness, "pro", FREE).headers["ETag"] == '"2"'


@pytest.mark.parametrize(("if_match", "status"), [('"1"', 200), ('"2"', 412), ('W/"1"', 412), ("*", 200)])
def test_a_plans_put_with_if_match_applies_only_at_that_version(harness: Harness, if_match: str, status: int) -> None:
    put_plan(harness, "pro", PRO)
    answer = put_plan(harness, "pro", FREE, if_match)
    assert answer.status == status, answer.text
    expected = FREE if status == 200 else PRO
    assert (
        harness.api.request("GET", "/plans/pro").json()["quotas"]["seats"]["limit"]
        == expected["quotas"]["seats"]["limit"]
    )


def test_a_retry_of_a_plans_put_that_landed_is_no_412(harness: Harness, faults: Faults) -> None:
    """Its write lands, the answer is lost, the SDK's retry fails the version condition: the PUT
    reads again, finds its quotas there and answers the plan, If-Match or not."""
    put_plan(harness, "pro", PRO)
    landed = faults.lands_then_500("PutItem", lambda params: "PLAN#pro" in str(params))
    answer = put_plan(harness, "pro", FREE, '"1"')
    assert landed == [1]
    assert (answer.status, answer.headers["ETag"]) == (200, '"2"'), answer.text
    assert put_plan(harness, "pro", FREE, '"1"').status == 200  # the client's own retry, after it


@pytest.mark.parametrize("if_match", ["*", '"1"'])
def test_if_match_never_creates_a_plan(harness: Harness, if_match: str) -> None:
    answer = put_plan(harness, "pro", PRO, if_match)
    assert (answer.status, answer.json()["error"]["code"]) == (412, "PreconditionFailed")
    assert harness.api.request("GET", "/plans/pro").status == 404


def test_a_plan_that_does_not_exist_is_404(harness: Harness) -> None:
    answer = harness.api.request("GET", "/plans/nope")
    assert (answer.status, answer.json()["error"]["code"]) == (404, "PlanNotFound")


@pytest.mark.engine
def test_plans_are_listed_by_name_a_page_at_a_time(harness: Harness) -> None:
    names = [f"p{index:02d}" for index in range(7)]
    for name in reversed(names):
        assert put_plan(harness, name, FREE).status == 200
    harness.api.put_account("acme", 3)  # an account is no plan
    seen, cursor = [], None
    while True:
        url = "/plans?limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = harness.api.request("GET", url)
        assert page.status == 200, page.text
        seen += [plan["plan"] for plan in page.json()["items"]]
        cursor = page.json()["nextCursor"]
        if cursor is None:
            break
    assert seen == names
    assert harness.api.request("GET", "/plans?cursor=eyJzayI6IkFDQ09VTlQifQ").json()["error"]["code"] == "InvalidCursor"


@pytest.mark.parametrize(
    "body",
    [
        {"quotas": {"default": {"limit": 5}}},  # the account's own type is never a plan's
        {"quotas": {"Seats": {"limit": 5}}},
        {"quotas": {"seats": {"limit": -1}}},
        {"quotas": {"seats": {"limit": 5, "thresholds": [0]}}},
        {"quotas": {"seats": {"limit": 5, "anchor": "2026-01-01T00:00:00Z"}}},
        {"quotas": {"seats": {"limit": 5, "period": "week"}}},
        {"quotas": {"seats": {"limit": 5, "extra": 1}}},
        # A plan's quota never ends: only an account's override can (was taken, and dropped unsaid).
        {"quotas": {"seats": {"limit": 5, "expiresAt": "2099-01-01T00:00:00Z"}}},
        {"quotas": {f"t{index}": {"limit": 1} for index in range(51)}},
        {"quotas": None},
        {},
    ],
)
def test_a_plans_quotas_are_checked_as_a_types_put_checks_them(harness: Harness, body: Any) -> None:
    answer = put_plan(harness, "pro", body)
    assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError"), answer.text
    assert harness.api.request("GET", "/plans/pro").status == 404


def test_an_account_put_on_a_plan_gets_every_quota_of_it(harness: Harness) -> None:
    put_plan(harness, "pro", PRO)
    answer = join(harness, "acme", "pro")
    assert answer.status == 200, answer.text
    body = answer.json()
    assert (body["plan"], body["limit"], body["limitSource"]) == ("pro", 0, "account")  # the default type: its own
    assert types_of(body) == {"builds": (1000, "plan"), "projects": (10, "plan"), "seats": (50, "plan")}
    builds = harness.api.request("GET", "/accounts/acme/types/builds").json()
    assert (builds["period"], builds["limitSource"]) == ("month", "plan")
    assert harness.api.request("GET", "/accounts/acme/types/projects").json()["thresholds"] == [50, 90]
    created = harness.api.create("acme", "p1", resource_type="projects")
    assert created.status == 201, created.text


@pytest.mark.engine
def test_an_existing_account_keeps_its_own_default_limit_and_rate_on_a_plan(harness: Harness) -> None:
    harness.api.request("PUT", "/accounts/acme", {"limit": 7, "rateLimit": {"requestsPerSecond": 5, "burstSeconds": 2}})
    put_plan(harness, "pro", PRO)
    body = join(harness, "acme", "pro").json()
    assert (body["limit"], body["rateLimit"], body["plan"]) == (7, {"requestsPerSecond": 5, "burstSeconds": 2}, "pro")
    assert harness.api.put_account("acme", 8).json()["plan"] == "pro"  # the default type's PUT leaves the plan


def test_an_account_without_a_plan_answers_as_before_with_its_limits_own(harness: Harness) -> None:
    harness.api.put_account("acme", 3)
    harness.api.put_type("acme", "seats", 4)
    body = harness.api.account("acme")
    assert "plan" not in body
    assert body["limitSource"] == "account"
    assert types_of(body) == {"seats": (4, "account")}


def test_a_plan_that_does_not_exist_writes_nothing(harness: Harness) -> None:
    from tests.support.truth import read_truth

    harness.api.put_account("acme", 3)
    before = read_truth(harness.backend.dynamodb, harness.backend.table)
    for account in ("acme", "newco"):
        answer = join(harness, account, "nope")
        assert (answer.status, answer.json()["error"]["code"]) == (404, "PlanNotFound")
    assert read_truth(harness.backend.dynamodb, harness.backend.table) == before
    assert harness.api.request("GET", "/accounts/newco").status == 404


@pytest.mark.parametrize(
    "body",
    [
        {"plan": "pro", "limit": 5},
        {"plan": "pro", "thresholds": [50]},
        {"plan": "pro", "period": "day"},
        {"plan": "pro", "rateLimit": {"requestsPerSecond": 5, "burstSeconds": 2}},
        {"plan": "Pro"},
        {"plan": None},
        {"limit": None},
        {},
    ],
)
def test_a_plan_comes_alone_in_an_accounts_put(harness: Harness, body: Any) -> None:
    put_plan(harness, "pro", PRO)
    answer = harness.api.request("PUT", "/accounts/acme", body)
    assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError"), answer.text
    assert harness.api.request("GET", "/accounts/acme").status == 404


def test_each_quota_given_announces_its_limit_change_and_a_second_application_changes_nothing(
    harness: Harness,
) -> None:
    """As a type's PUT: a type the account has changes its limit with a Limit Changed event; a type
    it lacks is created at the plan's limit (a type's first PUT announces none)."""
    from tests.handler.test_limit_changes import limit_changes

    put_plan(harness, "pro", PRO)
    harness.api.put_type("acme", "seats", 5)
    join(harness, "acme", "pro")
    etags = {t: harness.api.request("GET", f"/accounts/acme/types/{t}").headers["ETag"] for t in PRO["quotas"]}
    assert [(c["oldLimit"], c["newLimit"]) for c in limit_changes(harness, Quota("acme", "seats"))] == [(5, 50)]
    assert etags["seats"] == '"2"'
    assert limit_changes(harness, Quota("acme", "projects")) == []
    assert join(harness, "acme", "pro").status == 200
    assert len(limit_changes(harness, Quota("acme", "seats"))) == 1
    for resource_type in PRO["quotas"]:
        assert (
            harness.api.request("GET", f"/accounts/acme/types/{resource_type}").headers["ETag"] == etags[resource_type]
        )


@pytest.mark.engine
def test_a_failed_application_leaves_the_membership_and_its_retry_resumes(harness: Harness, faults: Faults) -> None:
    """The second type's write fails (nothing lands): the PUT answers 503, the account is not on
    the plan yet, the first type has its quota; the retry gives the rest, the first one not again."""
    from tests.handler.test_limit_changes import limit_changes

    put_plan(harness, "pro", PRO)
    for resource_type in PRO["quotas"]:
        harness.api.put_type("acme", resource_type, 1)
    failing = [True]

    def projects(params: dict[str, Any]) -> bool:
        return failing[0] and "ACCOUNT#acme#projects" in str(params)

    faults.answer_instead("TransactWriteItems", projects, faults.dynamodb_error("InternalServerError"), 500, times=100)
    failed = join(harness, "acme", "pro")
    assert failed.status == 503, failed.text
    account = harness.api.account("acme")
    assert "plan" not in account
    assert types_of(account) == {"builds": (1000, "plan"), "projects": (1, "account"), "seats": (1, "account")}
    failing[0] = False
    retried = join(harness, "acme", "pro")
    assert retried.status == 200, retried.text
    assert retried.json()["plan"] == "pro"
    assert types_of(retried.json()) == {"builds": (1000, "plan"), "projects": (10, "plan"), "seats": (50, "plan")}
    for resource_type in PRO["quotas"]:
        assert len(limit_changes(harness, Quota("acme", resource_type))) == 1


def test_a_types_own_put_on_a_plan_account_is_an_override_the_plan_leaves_standing(harness: Harness) -> None:
    put_plan(harness, "pro", PRO)
    join(harness, "acme", "pro")
    override = harness.api.put_type("acme", "seats", 60)
    assert (override.status, override.json()["limitSource"], override.json()["limit"]) == (200, "override", 60)
    assert harness.api.put_type("acme", "extra", 2).json()["limitSource"] == "account"  # not the plan's type
    put_plan(harness, "pro", {"quotas": {**PRO["quotas"], "seats": {"limit": 55}}})
    again = join(harness, "acme", "pro").json()  # the new version, applied: the override stands
    assert types_of(again)["seats"] == (60, "override")
    assert types_of(again)["extra"] == (2, "account")


@pytest.mark.engine
def test_removing_an_override_gives_the_type_its_plans_limit_once(harness: Harness) -> None:
    from tests.handler.test_limit_changes import limit_changes

    put_plan(harness, "pro", PRO)
    join(harness, "acme", "pro")
    harness.api.put_type("acme", "seats", 60)
    removed = harness.api.request("DELETE", "/accounts/acme/types/seats/override")
    assert removed.status == 200, removed.text
    assert (removed.json()["limit"], removed.json()["limitSource"]) == (50, "plan")
    assert [change["newLimit"] for change in limit_changes(harness, Quota("acme", "seats"))] == [60, 50]
    again = harness.api.request("DELETE", "/accounts/acme/types/seats/override")
    assert (again.status, again.json()["error"]["code"]) == (404, "OverrideNotFound")
    # The same limit as the plan's: a removal changes the source, announces nothing.
    harness.api.put_type("acme", "seats", 50)
    assert harness.api.request("DELETE", "/accounts/acme/types/seats/override").status == 200
    assert len(limit_changes(harness, Quota("acme", "seats"))) == 2


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("/accounts/acme/types/extra/override", "OverrideNotFound"),  # the account's own
        ("/accounts/acme/types/projects/override", "OverrideNotFound"),  # the plan's
        ("/accounts/acme/types/nope/override", "AccountNotFound"),
        ("/accounts/nobody/types/seats/override", "AccountNotFound"),
    ],
)
def test_only_an_override_is_removed(harness: Harness, url: str, code: str) -> None:
    put_plan(harness, "pro", PRO)
    join(harness, "acme", "pro")
    harness.api.put_type("acme", "extra", 2)
    answer = harness.api.request("DELETE", url)
    assert (answer.status, answer.json()["error"]["code"]) == (404, code)


@pytest.mark.engine
def test_moving_to_another_plan_gives_its_quotas_and_keeps_the_old_plans_others_as_the_accounts_own(
    harness: Harness,
) -> None:
    put_plan(harness, "pro", PRO)
    put_plan(harness, "free", FREE)
    join(harness, "acme", "pro")
    harness.api.put_type("acme", "projects", 12)  # an override: kept across the move
    moved = join(harness, "acme", "free").json()
    assert moved["plan"] == "free"
    assert types_of(moved) == {"seats": (3, "plan"), "projects": (12, "override"), "builds": (1000, "account")}
    harness.api.request("DELETE", "/accounts/acme/types/projects/override")
    assert types_of(harness.api.account("acme"))["projects"] == (1, "plan")


def test_a_plan_put_received_earlier_never_overwrites_one_received_later(harness: Harness) -> None:
    put_plan(harness, "pro", PRO)
    put_plan(harness, "free", FREE)
    received = harness.clock.epoch_ms()
    join(harness, "acme", "free", received_ms=received)
    late = join(harness, "acme", "pro", received_ms=received - 1000)
    assert late.status == 200, late.text
    body = harness.api.account("acme")
    assert body["plan"] == "free"
    assert types_of(body)["seats"] == (3, "plan")


def test_if_match_on_a_plans_account_put_is_the_accounts_etag(harness: Harness) -> None:
    put_plan(harness, "pro", PRO)
    harness.api.put_account("acme", 3)
    answer = harness.api.request("PUT", "/accounts/acme", {"plan": "pro"}, {"If-Match": '"9"'})
    assert (answer.status, answer.json()["error"]["code"]) == (412, "PreconditionFailed")
    assert "plan" not in harness.api.account("acme")
    assert harness.api.request("PUT", "/accounts/acme", {"plan": "pro"}, {"If-Match": '"1"'}).status == 200


def test_an_empty_plan_creates_the_account_with_its_default_type_at_zero(harness: Harness) -> None:
    put_plan(harness, "empty", {"quotas": {}})
    body = join(harness, "newco", "empty").json()
    assert (body["plan"], body["limit"]) == ("empty", 0)
    harness.check_invariants()


def test_plan_routes_answer_other_methods_405(harness: Harness) -> None:
    for method, url in [("POST", "/plans/pro"), ("DELETE", "/plans"), ("PUT", "/accounts/acme/types/seats/override")]:
        assert harness.api.request(method, url, {}).status == 405


def test_a_plan_lowering_a_types_limit_below_its_usage_refuses_and_crosses_as_a_put_does(harness: Harness) -> None:
    """The type holds 9 of 10; its account put on a plan of 8: the Limit Changed event says usage 9,
    the consumer decides the 100% crossing from it, and creates are refused until deletes pay back."""
    from tests.handler.test_limit_changes import limit_changes
    from tests.handler.test_usage_thresholds import crossings

    seats = Quota("acme", "seats")
    harness.api.put_type("acme", "seats", 10)
    made = [harness.api.create("acme", f"s{index}", resource_type="seats") for index in range(9)]
    assert {response.status for response in made} == {201}
    harness.pump()
    assert crossings(harness, seats) == [(80, "up", 9)]
    put_plan(harness, "small", {"quotas": {"seats": {"limit": 8}}})
    assert join(harness, "acme", "small").status == 200
    (changed,) = limit_changes(harness, seats)
    assert (changed["oldLimit"], changed["newLimit"], changed["usage"]) == (10, 8, 9)
    harness.pump()
    assert crossings(harness, seats)[1:] == [(100, "up", 9)]
    assert harness.api.create("acme", "over", resource_type="seats").status == 409
    harness.check_invariants()


def test_an_override_landing_while_the_plan_is_applied_stands(harness: Harness, faults: Faults) -> None:
    """The application reads seats (the plan's), then an override received before it lands first:
    the application's write fails its version condition, reads again, finds the override and
    leaves it (a later `PUT` of the plan never overwrites an override, whatever the order)."""
    put_plan(harness, "pro", PRO)
    join(harness, "acme", "pro")
    put_plan(harness, "pro", {"quotas": {**PRO["quotas"], "seats": {"limit": 55}}})
    harness.clock.advance(timedelta(seconds=10))
    received = harness.clock.epoch_ms()
    fired: list[int] = []

    def override_first(params: dict[str, Any]) -> None:
        if fired or "ACCOUNT#acme#seats" not in str(params):
            return
        fired.append(1)
        answer = harness.api.request("PUT", "/accounts/acme/types/seats", {"limit": 60}, None, received - 1000)
        assert answer.json()["limitSource"] == "override", answer.text

    faults.before_call("TransactWriteItems", override_first)
    assert join(harness, "acme", "pro", received_ms=received).status == 200
    assert fired == [1]
    assert types_of(harness.api.account("acme"))["seats"] == (60, "override")
