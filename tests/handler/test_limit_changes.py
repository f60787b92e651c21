"""Limit changes as usage events: a PUT that changes a limit writes a "Limit Changed" outbox item in
the transaction that changes it, and the consumer, seeing that item's insert, decides the quota's
crossings at once with no count moving (docs/events.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.adapters import keys
from functions.adapters.attributes import from_attributes
from functions.core.model import Quota
from tests.handler.conftest import Harness, Kind
from tests.handler.test_usage_thresholds import ACME, create, crossings
from tests.support.faults import Faults

LIMIT_CHANGED = "Limit Changed"


def outbox(harness: Harness, quota: Quota = ACME) -> list[tuple[str, dict[str, Any]]]:
    """The quota's outbox items, (detail-type, detail), in key order."""
    found = harness.backend.dynamodb.query(
        TableName=harness.backend.table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :events)",
        ExpressionAttributeValues={":pk": {"S": keys.account_pk(quota)}, ":events": {"S": keys.EVENT_PREFIX}},
        ConsistentRead=True,
    )["Items"]
    return [(str(values["detail_type"]), json.loads(values["detail"])) for values in map(from_attributes, found)]


def limit_changes(harness: Harness, quota: Quota = ACME) -> list[dict[str, Any]]:
    return [detail for detail_type, detail in outbox(harness, quota) if detail_type == LIMIT_CHANGED]


def at_nine_of_ten(harness: Harness) -> list[str]:
    harness.api.put_account("acme", 10)
    ids = create(harness, 9)
    harness.pump()
    assert crossings(harness) == [(80, "up", 9)]
    return ids


def test_lowering_a_limit_below_the_usage_crosses_100_percent_once_with_no_count_change(harness: Harness) -> None:
    at_nine_of_ten(harness)
    assert harness.api.put_account("acme", 8).status == 200
    (changed,) = limit_changes(harness)  # in the PUT's own transaction: before any consumer ran
    assert {key: changed[key] for key in ("accountId", "resourceType", "oldLimit", "newLimit", "usage")} == {
        "accountId": "acme",
        "resourceType": "default",
        "oldLimit": 10,
        "newLimit": 8,
        "usage": 9,
    }
    assert changed["changedBy"] == "arn:aws:iam::123456789012:user/admin"
    assert changed["limitVersion"] == 2
    records = harness.tap.drain()
    assert harness.deliver(records) == []
    assert harness.deliver(records) == []  # a duplicated batch
    harness.pump()
    assert crossings(harness)[1:] == [(100, "up", 9)]
    assert [event for event in crossings(harness) if event[0] == 100] == [(100, "up", 9)]
    harness.check_invariants()


@pytest.mark.parametrize("code", ["TransactionConflict", "ThrottlingError", "ConditionalCheckFailed"])
def test_a_limit_changes_decision_cancelled_on_its_counter_is_made_again(
    harness: Harness, faults: Faults, code: str
) -> None:
    """The decision after a limit change moves no resource: a cancellation names only its counter
    (or its crossings' outbox items). Its record fails and is retried, or it decides again at
    once on a counter that moved; never taken as done with nothing written."""
    at_nine_of_ten(harness)
    assert harness.api.put_account("acme", 8).status == 200
    records = harness.tap.drain()
    faults.answer_instead(
        "TransactWriteItems", lambda _: True, faults.transaction_cancelled(code, "None")
    )  # the counter's action, and the 100% crossing's outbox item
    failed = harness.deliver(records)
    if code == "ConditionalCheckFailed":
        assert failed == []  # read again and decided at once
    else:
        assert failed == [
            next(r for r in records if "LIMIT#" in r["dynamodb"]["Keys"]["sk"]["S"])["dynamodb"]["SequenceNumber"]
        ]
        assert crossings(harness) == [(80, "up", 9)]
        assert harness.deliver(records) == []
    assert crossings(harness) == [(80, "up", 9), (100, "up", 9)]
    harness.check_invariants()


def test_raising_a_limit_above_the_usage_crosses_down_once(harness: Harness) -> None:
    at_nine_of_ten(harness)
    harness.api.put_account("acme", 20)  # boundaries 16 and 20
    harness.pump()
    assert crossings(harness) == [(80, "up", 9), (80, "down", 9)]
    assert [(c["oldLimit"], c["newLimit"]) for c in limit_changes(harness)] == [(10, 20)]
    create(harness, 7)  # 16 of 20: the new headroom holds
    harness.pump()
    assert crossings(harness) == [(80, "up", 9), (80, "down", 9), (80, "up", 16)]


def test_a_put_that_leaves_the_limit_as_it_was_or_creates_the_account_writes_no_event(harness: Harness) -> None:
    harness.api.put_account("acme", 10)
    harness.api.put_account("acme", 10)
    harness.pump()
    assert outbox(harness) == []


def test_a_limit_change_replayed_after_more_counting_adds_no_crossing(harness: Harness) -> None:
    ids = at_nine_of_ten(harness)
    harness.api.put_account("acme", 8)
    records = harness.tap.drain()
    assert harness.deliver(records) == []
    for resource_id in ids[:3]:  # 6 of 8: below both boundaries (7 and 8)
        assert harness.api.delete("acme", resource_id).status == 204
    harness.pump()
    assert harness.deliver(records) == []  # a redriven range, long after
    assert crossings(harness) == [(80, "up", 9), (100, "up", 9), (100, "down", 6), (80, "down", 6)]


def test_a_types_limit_change_is_its_own(harness: Harness, kind: Kind) -> None:
    kind.put(5)
    for index in range(4):
        assert kind.create(f"r{index}").status == 201
    harness.pump()
    kind.put(4)
    harness.pump()
    assert [(c["resourceType"], c["oldLimit"], c["newLimit"]) for c in limit_changes(harness, kind.quota)] == [
        (kind.quota.resource_type, 5, 4)
    ]
    assert [(e[0], e[1]) for e in crossings(harness, kind.quota)] == [(80, "up"), (100, "up")]
    kind.check_bystander()
