"""Upgrades keep the table (docs/upgrade.md): today's template, deployed over
the last release's stack (infra/released_layout.json), must keep the table's logical id, key
schema, stream and TTL, change at most one index, and keep every stateful resource."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from infra import options
from infra.layout_guard import layout_of, upgrade_problems
from infra.outputs import OUTPUT_TABLE_NAME
from infra.synth import synth_template_json, synthesize_stack_template
from scripts.released_layout import RELEASED_LAYOUT


@pytest.fixture(scope="module")
def current() -> dict[str, Any]:
    return layout_of(synth_template_json())


@pytest.fixture(scope="module")
def released() -> dict[str, Any]:
    return dict(json.loads(RELEASED_LAYOUT.read_text(encoding="utf-8")))


def test_deploying_today_over_the_last_release_keeps_the_table(
    released: dict[str, Any], current: dict[str, Any]
) -> None:
    assert upgrade_problems(released, current) == [], (
        "see docs/upgrade.md; if the change is intended and safe in steps, "
        "run `make released-layout` and add a CHANGELOG line"
    )


def test_the_table_is_protected_from_deletion(current: dict[str, Any]) -> None:
    template = synth_template_json()
    [table] = [r for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    assert table["Properties"]["DeletionProtectionEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"


RESTORED = "counter-restored"
RESTORED_STREAM = f"arn:aws:dynamodb:us-east-1:123456789012:table/{RESTORED}/stream/2026-11-23T00:00:00.000"


def test_the_stack_runs_on_a_restored_table_it_does_not_own() -> None:
    template = synthesize_stack_template(
        {
            options.EXISTING_TABLE_NAME.key: RESTORED,
            options.EXISTING_TABLE_STREAM.key: RESTORED_STREAM,
        }
    )
    assert not [r for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    assert template["Outputs"][OUTPUT_TABLE_NAME]["Value"] == RESTORED
    mappings = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    assert RESTORED_STREAM in [mapping["Properties"]["EventSourceArn"] for mapping in mappings]
    # The functions reach the restored table and its indexes by name, and nothing else.
    text = json.dumps(template)
    assert f"table/{RESTORED}/index/pending" in text
    assert f"table/{RESTORED}/index/activity" in text


@pytest.mark.parametrize("given", [{"tableName": RESTORED}, {"tableName": RESTORED, "tableStreamArn": "arn:nope"}])
def test_a_restored_table_needs_its_name_and_its_stream(given: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="go together"):
        synthesize_stack_template(given)


def changed(layout: dict[str, Any], change: Any) -> dict[str, Any]:
    copied = copy.deepcopy(layout)
    change(copied)
    return copied


def indexes(layout: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = layout["table"]["indexes"]
    return found


INDEX = {"keySchema": [{"AttributeName": "x", "KeyType": "HASH"}], "projection": {"ProjectionType": "KEYS_ONLY"}}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda layout: layout["table"].update(logicalId="Table2"), "logical id"),
        (lambda layout: layout["table"]["keySchema"].pop(), "key schema"),
        (lambda layout: layout["table"].update(stream={"StreamViewType": "NEW_IMAGE"}), "stream"),
        (lambda layout: layout["table"].update(ttl=None), "TTL"),
        (lambda layout: layout["table"]["indexes"].update(a=INDEX, b=INDEX), "more than one index"),
        (
            lambda layout: layout["table"]["indexes"].pop("pending") and layout["table"]["indexes"].update(a=INDEX),
            "more than one index",
        ),
        (
            lambda layout: layout["table"]["indexes"]["pending"].update(projection={"ProjectionType": "ALL"}),
            "changed in place",
        ),
        (lambda layout: layout["stateful"].pop(0), "stateful resources"),
    ],
)
def test_each_unsafe_change_is_caught(current: dict[str, Any], change: Any, problem: str) -> None:
    problems = upgrade_problems(current, changed(current, change))
    assert any(problem in found for found in problems), problems


def test_one_index_added_or_removed_per_deploy_is_safe(current: dict[str, Any]) -> None:
    assert upgrade_problems(current, changed(current, lambda layout: layout["table"]["indexes"].update(a=INDEX))) == []
    assert upgrade_problems(current, changed(current, lambda layout: layout["table"]["indexes"].pop("pending"))) == []
