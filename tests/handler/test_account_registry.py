"""The account registry (docs/plans.md, "The account registry"): `GET /accounts`, every account or
a plan's, a page at a time from the accounts index; the index's entries written with an account's
creation and its membership, and an older account's by the backfill. Through the real handler."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from functions.adapters.shards import account_key
from functions.adapters.table_layout import REGISTRY
from functions.core.model import Quota
from tests.handler.conftest import Harness

PRO = {"quotas": {"seats": {"limit": 50}, "projects": {"limit": 10}}}
FREE = {"quotas": {"seats": {"limit": 3}}}


def every_page(harness: Harness, query: str, limit: int) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    cursor = None
    for _ in range(50):
        url = f"/accounts?limit={limit}{query}" + (f"&cursor={cursor}" if cursor else "")
        page = harness.api.request("GET", url)
        assert page.status == 200, page.text
        assert len(page.json()["items"]) <= limit
        seen += page.json()["items"]
        cursor = page.json()["nextCursor"]
        if cursor is None:
            return seen
    raise AssertionError("the pages never ended")


def plant(harness: Harness) -> None:
    assert harness.api.request("PUT", "/plans/pro", PRO).status == 200
    assert harness.api.request("PUT", "/plans/free", FREE).status == 200
    assert harness.api.request("PUT", "/plans/empty", {"quotas": {}}).status == 200  # a plan no account is on
    for account in ("zed", "acme", "bolt"):
        assert harness.api.put_account(account, 3).status == 200
    for account, plan in (("p2", "pro"), ("p1", "pro"), ("f1", "free"), ("p3", "pro")):
        assert harness.api.request("PUT", f"/accounts/{account}", {"plan": plan}).status == 200
    # An account created by its first type's PUT is listed too (its default type's item is created then).
    assert harness.api.request("PUT", "/accounts/typed/types/seats", {"limit": 2}).status == 200


@pytest.mark.parametrize("limit", [1, 2, 3, 25])
def test_every_account_is_listed_once_those_on_no_plan_first_then_each_plans(harness: Harness, limit: int) -> None:
    plant(harness)
    seen = every_page(harness, "", limit)
    assert seen == [
        {"accountId": "acme"},
        {"accountId": "bolt"},
        {"accountId": "typed"},
        {"accountId": "zed"},
        {"accountId": "f1", "plan": "free", "planVersion": 1},
        {"accountId": "p1", "plan": "pro", "planVersion": 1},
        {"accountId": "p2", "plan": "pro", "planVersion": 1},
        {"accountId": "p3", "plan": "pro", "planVersion": 1},
    ]


@pytest.mark.engine
def test_a_plans_accounts_are_listed_by_id_and_follow_a_move(harness: Harness) -> None:
    plant(harness)
    assert [item["accountId"] for item in every_page(harness, "&plan=pro", 2)] == ["p1", "p2", "p3"]
    assert every_page(harness, "&plan=empty", 25) == []
    assert every_page(harness, "&plan=nosuchplan", 25) == []
    # Moved to another plan: listed under it (one write, the membership), with the version given.
    assert harness.api.request("PUT", "/accounts/p2", {"plan": "free"}).status == 200
    assert harness.api.request("PUT", "/accounts/acme", {"plan": "free"}).status == 200
    assert [item["accountId"] for item in every_page(harness, "&plan=pro", 25)] == ["p1", "p3"]
    assert every_page(harness, "&plan=free", 25) == [
        {"accountId": "acme", "plan": "free", "planVersion": 1},
        {"accountId": "f1", "plan": "free", "planVersion": 1},
        {"accountId": "p2", "plan": "free", "planVersion": 1},
    ]
    assert "acme" not in [item["accountId"] for item in every_page(harness, "", 3) if "plan" not in item]


def cursor_of(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "query",
    [
        "cursor=" + cursor_of({"r": "pro", "a": "p1"}) + "&plan=free",  # another plan's cursor
        "cursor=" + cursor_of({"r": "ACCOUNT#x", "a": "p1"}),  # no registry partition
        "cursor=" + cursor_of({"r": "pro", "a": "../x"}),  # no account id
        "cursor=" + cursor_of({"r": "pro", "a": 3}),
        "cursor=" + cursor_of({"sk": "PLAN#pro"}),  # the plans' cursor
        "cursor=bm90IGpzb24",
    ],
)
def test_a_cursor_the_api_did_not_give_is_refused(harness: Harness, query: str) -> None:
    plant(harness)
    answer = harness.api.request("GET", f"/accounts?{query}")
    assert answer.status == 400
    assert answer.json()["error"]["code"] == "InvalidCursor"


@pytest.mark.parametrize("query", ["plan=Pro", "plan=", "plan=-", "limit=0", "limit=101", "cursor=a%2Fb"])
def test_hostile_parameters_are_400(harness: Harness, query: str) -> None:
    answer = harness.api.request("GET", f"/accounts?{query}")
    assert answer.status == 400
    assert answer.json()["error"]["code"] == "ValidationError"


@pytest.mark.engine
def test_an_account_from_before_the_registry_is_listed_once_backfilled(harness: Harness) -> None:
    from ops.registry import backfill_registry

    plant(harness)
    table = harness.wiring.table
    for account in ("acme", "p1"):  # as an older release wrote them: no registry key
        table.client.update_item(
            TableName=table.name, Key=account_key(Quota(account)), UpdateExpression=f"REMOVE {REGISTRY}"
        )
    listed = [item["accountId"] for item in every_page(harness, "", 25)]
    assert "acme" not in listed
    assert "p1" not in listed
    assert backfill_registry(table) == 2
    assert backfill_registry(table) == 0  # once only
    assert [item["accountId"] for item in every_page(harness, "", 25)] == [
        "acme",
        "bolt",
        "typed",
        "zed",
        "f1",
        "p1",
        "p2",
        "p3",
    ]
