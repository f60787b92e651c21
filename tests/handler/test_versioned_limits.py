"""Versioned limits (docs/api.md): every account read answers an ETag, a PUT with
If-Match changes the account only at that version, and an older PUT never overwrites a newer
limit, whether it lands late or is retried by the SDK. Through the real handler and conditions."""

from __future__ import annotations

import json

import pytest

from tests.handler.conftest import Harness
from tests.support.faults import Faults


def put(harness: Harness, limit: int, if_match: str | None = None, received_ms: int | None = None) -> object:
    headers = {"If-Match": if_match} if if_match is not None else None
    return harness.api.request("PUT", "/accounts/acme", {"limit": limit}, headers, received_ms)


def test_each_limit_change_moves_the_etag(harness: Harness) -> None:
    created = harness.api.put_account("acme", 3)
    assert created.headers["ETag"] == '"1"'
    assert harness.api.request("GET", "/accounts/acme").headers["ETag"] == '"1"'
    assert harness.api.put_account("acme", 4).headers["ETag"] == '"2"'
    # Creates and deletes do not change the limit: the ETag stays.
    harness.api.create("acme")
    assert harness.api.request("GET", "/accounts/acme").headers["ETag"] == '"2"'


def test_a_put_with_the_current_etag_applies(harness: Harness) -> None:
    harness.api.put_account("acme", 3)
    answer = put(harness, 9, if_match='"1"')
    assert (answer.status, answer.headers["ETag"], answer.json()["limit"]) == (200, '"2"', 9)
    assert put(harness, 10, if_match='"7", "2"').status == 200  # any of a list


@pytest.mark.parametrize("if_match", ['"1"', 'W/"2"', '"abc"'])
def test_a_put_with_another_etag_is_refused_and_changes_nothing(harness: Harness, if_match: str) -> None:
    harness.api.put_account("acme", 3)
    harness.api.put_account("acme", 5)  # now at "2"
    answer = put(harness, 9, if_match=if_match)
    assert (answer.status, answer.json()["error"]["code"]) == (412, "PreconditionFailed")
    assert harness.api.account("acme")["limit"] == 5


@pytest.mark.parametrize("if_match", ["*", '"1"'])
def test_if_match_never_creates_an_account(harness: Harness, if_match: str) -> None:
    answer = put(harness, 9, if_match=if_match)
    assert (answer.status, answer.json()["error"]["code"]) == (412, "PreconditionFailed")
    assert harness.api.request("GET", "/accounts/acme").status == 404


def test_if_match_star_changes_an_account_that_exists(harness: Harness) -> None:
    harness.api.put_account("acme", 3)
    assert put(harness, 9, if_match="*").json()["limit"] == 9


def test_an_if_match_that_is_not_entity_tags_is_a_400(harness: Harness) -> None:
    harness.api.put_account("acme", 3)
    answer = put(harness, 9, if_match="1")
    assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError")
    assert harness.api.account("acme")["limit"] == 3


def test_a_put_received_earlier_never_overwrites_one_received_later(harness: Harness) -> None:
    """The hedged-write problem: PUT 5 is received first, but its invocation is slow and lands
    after PUT 7, received a second later. The limit stays 7, and PUT 5 answers what is there."""
    harness.api.put_account("acme", 3)
    received = harness.clock.epoch_ms()
    assert put(harness, 7, received_ms=received).json()["limit"] == 7
    late = put(harness, 5, received_ms=received - 1000)
    assert (late.status, late.json()["limit"], late.headers["ETag"]) == (200, 7, '"2"')
    assert harness.api.account("acme")["limit"] == 7


@pytest.mark.parametrize(
    ("limit", "call"),
    [(3, "UpdateItem"), (9, "TransactWriteItems")],
    ids=["same-limit-update", "changed-limit-with-its-event"],
)
def test_a_limit_change_retried_by_the_sdk_after_it_landed_is_not_a_412(
    harness: Harness, faults: Faults, limit: int, call: str
) -> None:
    """The change lands, the answer is lost, the SDK's retry fails its condition (the version
    moved): the PUT recognises its own write by its token instead of refusing its own If-Match.
    A PUT that changes the limit writes its event with it, in one transaction."""
    harness.api.put_account("acme", 3)
    landed = faults.lands_then_500(call, lambda params: ":token" in json.dumps(params))
    answer = put(harness, limit, if_match='"1"')
    assert landed == [1]
    assert (answer.status, answer.json()["limit"], answer.headers["ETag"]) == (200, limit, '"2"')
    assert harness.api.account("acme")["available"] == limit
