"""A quota's own usage thresholds, set in its PUT (`thresholds`): stored on its account item by the
PUT's one write, shown by its reads, used by the consumer's decisions, and a change of them
announced and decided as a limit change is (docs/events.md)."""

from __future__ import annotations

from typing import Any

import pytest

from functions.adapters.attributes import from_attributes
from functions.adapters.shards import account_key
from tests.handler.conftest import Harness, Kind
from tests.handler.test_hostile_input import refused_before_any_write
from tests.handler.test_limit_changes import limit_changes, outbox
from tests.handler.test_usage_thresholds import ACME, create, crossings


def put(harness: Harness, url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    response = harness.api.request("PUT", url, body, headers)
    assert response.status == 200, response.text
    return response


def test_a_quotas_own_thresholds_are_stored_sorted_on_its_account_item_and_read_back(harness: Harness) -> None:
    created = put(harness, "/accounts/acme", {"limit": 10, "thresholds": [90, 50, 75]})
    assert created.json()["thresholds"] == [50, 75, 90]
    item = from_attributes(
        harness.backend.dynamodb.get_item(TableName=harness.backend.table, Key=account_key(ACME))["Item"]
    )
    assert item["thresholds"] == [50, 75, 90]
    assert harness.api.account("acme")["thresholds"] == [50, 75, 90]
    # Omitted, the quota keeps the ones it has.
    assert put(harness, "/accounts/acme", {"limit": 12}).json()["thresholds"] == [50, 75, 90]
    assert harness.api.account("acme")["thresholds"] == [50, 75, 90]


def test_a_quota_never_given_thresholds_answers_without_them(harness: Harness) -> None:
    assert "thresholds" not in put(harness, "/accounts/acme", {"limit": 10}).json()
    assert "thresholds" not in harness.api.account("acme")
    types = harness.api.request("GET", "/accounts/acme/types").json()["items"]
    assert all("thresholds" not in item for item in types)


@pytest.mark.engine
def test_a_types_thresholds_are_its_own(harness: Harness) -> None:
    put(harness, "/accounts/acme", {"limit": 10})
    seats = put(harness, "/accounts/acme/types/seats", {"limit": 4, "thresholds": [50]}).json()
    assert seats["thresholds"] == [50]
    account = harness.api.account("acme")
    assert "thresholds" not in account
    assert account["types"][0]["thresholds"] == [50]
    assert harness.api.request("GET", "/accounts/acme/types/seats").json()["thresholds"] == [50]
    listed = harness.api.request("GET", "/accounts/acme/types").json()["items"]
    assert ["thresholds" in item for item in listed] == [False, True]


def test_a_thresholds_change_takes_a_new_etag_and_honours_if_match(harness: Harness) -> None:
    first = put(harness, "/accounts/acme", {"limit": 10})
    assert first.headers["ETag"] == '"1"'
    changed = put(harness, "/accounts/acme", {"limit": 10, "thresholds": [50]}, {"If-Match": '"1"'})
    assert changed.headers["ETag"] == '"2"'
    stale = harness.api.request("PUT", "/accounts/acme", {"limit": 10, "thresholds": [60]}, {"If-Match": '"1"'})
    assert stale.status == 412
    assert harness.api.account("acme")["thresholds"] == [50]


@pytest.mark.engine
def test_the_consumer_decides_crossings_against_the_quotas_own_thresholds(harness: Harness) -> None:
    put(harness, "/accounts/acme", {"limit": 10, "thresholds": [30, 60]})  # boundaries 3 and 6
    ids = create(harness, 4)
    harness.pump()
    assert crossings(harness) == [(30, "up", 4)]
    create(harness, 4)
    harness.pump()
    assert crossings(harness) == [(30, "up", 4), (60, "up", 8)]  # 80% is not one of its thresholds
    for resource_id in ids:
        assert harness.api.delete("acme", resource_id).status == 204
    harness.pump()
    assert crossings(harness)[2:] == [(60, "down", 4)]
    harness.check_invariants()


def test_new_thresholds_below_the_usage_are_crossed_up_once_each_with_no_count_moving(harness: Harness) -> None:
    put(harness, "/accounts/acme", {"limit": 10})
    create(harness, 7)  # 70%: below 80, so nothing announced yet
    harness.pump()
    assert crossings(harness) == []
    put(harness, "/accounts/acme", {"limit": 10, "thresholds": [50, 70]})  # boundaries 5 and 7
    (changed,) = limit_changes(harness)  # written by the PUT's own transaction
    assert {key: changed[key] for key in ("oldLimit", "newLimit", "oldThresholds", "newThresholds", "usage")} == {
        "oldLimit": 10,
        "newLimit": 10,
        "oldThresholds": [80, 100],
        "newThresholds": [50, 70],
        "usage": 7,
    }
    records = harness.tap.drain()
    assert harness.deliver(records) == []
    assert harness.deliver(records) == []  # a duplicated batch
    harness.pump()
    assert crossings(harness) == [(50, "up", 7), (70, "up", 7)]
    assert harness.deliver(records) == []  # a redriven range, later
    assert crossings(harness) == [(50, "up", 7), (70, "up", 7)]
    harness.check_invariants()


def test_a_threshold_announced_above_and_then_removed_is_crossed_down(harness: Harness) -> None:
    """The decision walks from what was announced to the new truth: 80 was announced up, and is
    no threshold any more, so it is crossed down (each threshold's crossings alternate up and
    down, whatever the usage), and 50 and 70 up."""
    put(harness, "/accounts/acme", {"limit": 10})
    create(harness, 9)
    harness.pump()
    assert crossings(harness) == [(80, "up", 9)]
    put(harness, "/accounts/acme", {"limit": 10, "thresholds": [50, 70]})
    harness.pump()
    assert crossings(harness) == [(80, "up", 9), (50, "up", 9), (70, "up", 9), (80, "down", 9)]
    create(harness, 1)  # 100%: no threshold of the quota's
    harness.pump()
    assert crossings(harness)[4:] == []
    harness.check_invariants()


@pytest.mark.engine
def test_a_put_that_changes_neither_limit_nor_thresholds_writes_no_event(harness: Harness) -> None:
    put(harness, "/accounts/acme", {"limit": 10})
    put(harness, "/accounts/acme", {"limit": 10, "thresholds": [100, 80]})  # the defaults, given as its own
    assert harness.api.account("acme")["thresholds"] == [80, 100]
    put(harness, "/accounts/acme", {"limit": 10})
    harness.pump()
    assert outbox(harness) == []


@pytest.mark.engine
def test_the_defaults_given_back_return_a_quota_to_them(harness: Harness) -> None:
    put(harness, "/accounts/acme", {"limit": 10, "thresholds": [50]})
    create(harness, 6)
    harness.pump()
    assert crossings(harness) == [(50, "up", 6)]
    put(harness, "/accounts/acme", {"limit": 10, "thresholds": [80, 100]})
    harness.pump()
    assert [(c["oldThresholds"], c["newThresholds"]) for c in limit_changes(harness)] == [([50], [80, 100])]
    assert crossings(harness) == [(50, "up", 6), (50, "down", 6)]
    create(harness, 2)
    harness.pump()
    assert crossings(harness)[2:] == [(80, "up", 8)]


def test_a_limit_and_thresholds_changed_together_are_one_change(harness: Harness) -> None:
    put(harness, "/accounts/acme", {"limit": 10})
    create(harness, 5)
    harness.pump()
    put(harness, "/accounts/acme", {"limit": 20, "thresholds": [25]})  # boundary 5
    harness.pump()
    assert [(c["oldLimit"], c["newLimit"], c["oldThresholds"], c["newThresholds"]) for c in limit_changes(harness)] == [
        (10, 20, [80, 100], [25])
    ]
    assert crossings(harness) == [(25, "up", 5)]


def test_a_types_thresholds_change_is_decided_on_its_own_counter(harness: Harness, kind: Kind) -> None:
    kind.put(10)
    for index in range(6):
        assert kind.create(f"r{index}").status == 201
    harness.pump()
    put(harness, kind.url, {"limit": 10, "thresholds": [50]})
    harness.pump()
    assert [(c["oldThresholds"], c["newThresholds"]) for c in limit_changes(harness, kind.quota)] == [([80, 100], [50])]
    assert crossings(harness, kind.quota) == [(50, "up", 6)]
    kind.check_bystander()


def test_a_refused_threshold_is_named_by_its_place(harness: Harness) -> None:
    put(harness, "/accounts/acme", {"limit": 10})
    for body, message in (
        ('{"limit": 10, "thresholds": [50, 0]}', "thresholds.1: Input should be greater than or equal to 1"),
        ('{"limit": 10, "thresholds": [50, 50]}', "thresholds: Value error, each threshold at most once"),
        ('{"limit": 10, "thresholds": null}', "thresholds: Value error, must be a list of percentages"),
    ):
        assert refused_before_any_write(harness, "PUT", "/accounts/acme", body, None).startswith(message)
