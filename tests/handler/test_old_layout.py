"""A table written by the release before resource types, used by this one with no migration.

data/previous_release_writes.json holds every DynamoDB write the previous release's API made (its
requests' parameters, recorded from its handler on its test clock) for: PUT /accounts/old (limit
3); a keyed create (`k1`, "kept"); a create of "doomed"; a create that died after reserving its
slot; the delete of "doomed"; and that release's answers to GET of the account and its list. The
test replays those writes into an empty table, exactly, then reads, lists, counts (the stream
consumer), heals and deletes with this release's code: the default type's keys are the table's,
and an account without a registry of types answers byte for byte as it did."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore import xform_name

from functions.core.healing import HealOutcome, heal_account
from functions.core.model import Quota
from tests.handler.conftest import Harness

RECORDED = json.loads((Path(__file__).parent / "data" / "previous_release_writes.json").read_text(encoding="utf-8"))
OLD = Quota("old")


def replay_previous_release(harness: Harness) -> dict[str, Any]:
    """The previous release's writes, into this test's table; returns its answers."""
    client = harness.backend.dynamodb
    for write in RECORDED["writes"]:
        params = json.loads(json.dumps(write["params"]).replace('"TABLE"', json.dumps(harness.backend.table)))
        getattr(client, xform_name(write["operation"]))(**params)
    answers: dict[str, Any] = RECORDED["answers"]
    return answers


@pytest.mark.engine
def test_the_previous_releases_items_are_read_counted_healed_and_deleted_as_the_default_type(
    harness: Harness,
) -> None:
    answers = replay_previous_release(harness)
    api = harness.api
    # Read: the same answers, byte for byte, no `types` field and no registry written by a read;
    # the account's only with the fields plans added after its limit (docs/plans.md): its limit's
    # source and its mode.
    account = api.request("GET", "/accounts/old")
    with_source = answers["account"].replace('"limit":3,', '"limit":3,"limitSource":"account","mode":"enforce",', 1)
    assert (account.text, account.headers["ETag"]) == (with_source, answers["etag"])
    assert api.request("GET", "/accounts/old/resources").text == answers["list"]
    kept = json.loads(answers["kept"])
    assert api.request("GET", f"/accounts/old/resources/{kept['resourceId']}").text == answers["kept"]
    assert api.request("GET", "/accounts/old/types").json()["items"][0]["type"] == "default"
    assert api.request("GET", "/accounts/old/types/default").json()["limit"] == 3
    # A retry of the keyed create that spans the upgrade finds its resource.
    retried = api.create("old", "kept", key="k1", size=2)
    assert (retried.status, retried.text) == (200, answers["kept"])

    # Counted by this release's consumer, from the previous release's stream records.
    harness.pump()
    truth = harness.truth(OLD)
    assert (truth.live, truth.eventual, truth.processed, truth.existing) == (1, 1, 1, 1)
    assert truth.leases == 1  # the create that died holds its slot until a heal
    # Before amounts: no resource item has `amount`, no lease value says its units; they read as 1.
    assert not [write for write in RECORDED["writes"] if "amount" in write["params"].get("Item", {})]
    [dead] = harness.wiring.api_store.read_shards(OLD, [0])[0].leases
    assert dead.units == 1
    harness.check_invariants()

    # Healed: the dead create's slot is free again.
    later = harness.clock.now() + timedelta(minutes=10)
    assert heal_account(harness.wiring.healing_store, OLD, later, timedelta(minutes=1)).outcome is HealOutcome.HEALED
    assert [api.create("old", f"new-{index}").status for index in range(3)] == [201, 201, 409]

    # Deleted, and counted, with this release's code.
    assert api.delete("old", kept["resourceId"]).status == 204
    assert api.create("old", "kept", key="k1", size=2).status == 409  # IdempotencyKeyReused
    harness.pump()
    truth = harness.truth(OLD)
    assert (truth.live, truth.eventual, truth.admitted, truth.best_effort_net) == (2, 2, 2, 2)
    harness.check_invariants()
    assert set(api.account("old")) == {
        *("accountId", "limit", "limitSource", "mode", "bestEffort", "eventual", "used", "available", "rateLimit")
    }


def test_the_previous_releases_account_takes_a_type_beside_its_default_type(harness: Harness) -> None:
    """The first PUT of a type adds the registry to the old account item; the default type's
    counters and limit stay as they were, and GET of the account then shows the type."""
    answers = replay_previous_release(harness)
    harness.pump()
    before = harness.truth(OLD)
    assert harness.api.put_type("old", "seats", 2).status == 200
    assert harness.truth(OLD) == before
    body = harness.api.account("old")
    assert [view["type"] for view in body.pop("types")] == ["seats"]
    assert body == {**json.loads(answers["account"]), "eventual": 1, "limitSource": "account", "mode": "enforce"}
