"""Shadow mode (docs/plans.md, "Shadow mode"): a quota that never refuses, counts exactly, and
announces the refusals enforcement would have made, through the real handler, the table's
conditions and the refusal aggregator; switched to enforce, it behaves as a lowered limit."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from functions.adapters import keys, table_layout
from functions.core import accounts
from functions.core.admission import Directory
from functions.core.errors import LimitExceeded
from functions.core.model import NewResource, Quota, Resource
from functions.core.refusals import Window, filter_pattern, parse_refusal
from functions.usage_events.models import LimitChanged, LimitRefused
from local.log_subscriptions import FilterPattern
from tests.handler.conftest import Harness
from tests.handler.patience import patient_stores
from tests.handler.test_invariants import run_together
from tests.handler.test_limit_refused import MINUTE, Refusals
from tests.handler.test_limit_refused import api_lines as api_lines  # a fixture
from tests.handler.test_limit_refused import refusals as refusals  # a fixture
from tests.handler.test_sharded_admission import create_carefully, process, spread
from tests.support.faults import Faults

ACME, SEATS = Quota("acme"), Quota("acme", "seats")


def put(harness: Harness, url: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = harness.api.request("PUT", url, body)
    assert answer.status == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def limit_changes(harness: Harness, quota: Quota) -> list[LimitChanged]:
    """The quota's Limit Changed events, in order, from their outbox items."""
    found = harness.backend.dynamodb.query(
        TableName=harness.backend.table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues={
            ":pk": {"S": keys.account_pk(quota)},
            ":prefix": {"S": keys.limit_change_sk(0)[:-12]},
        },
    )["Items"]
    return [LimitChanged.model_validate_json(item["detail"]["S"]) for item in found]


def announced(harness: Harness, window: Window) -> tuple[str, LimitRefused] | None:
    """A window's Limit Refused event, as its outbox item holds it (the JSON, and its model)."""
    key = table_layout.item_key(keys.account_pk(window.quota), keys.limit_refused_sk(window.key_name))
    item = harness.backend.dynamodb.get_item(TableName=harness.backend.table, Key=key).get("Item")
    return None if item is None else (item["detail"]["S"], LimitRefused.model_validate_json(item["detail"]["S"]))


def test_a_shadow_quota_at_its_limit_admits_counts_and_announces_what_enforcement_would_refuse(
    harness: Harness, refusals: Refusals, api_lines: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    api = harness.api
    pattern = FilterPattern.parse(filter_pattern())
    assert put(harness, "/accounts/acme", {"limit": 2, "mode": "shadow"})["mode"] == "shadow"
    assert put(harness, "/accounts/other", {"limit": 2})["mode"] == "enforce"  # an old body: as before
    for account in ("acme", "other"):
        assert api.create(account, "a").status == 201
        assert api.create(account, "b").status == 201
    assert not [line for line in api_lines if pattern.matches(line)]
    capsys.readouterr()
    past = api.create("acme", "c")
    assert past.status == 201, past.text
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [(m.get("ShadowRefusals"), m.get("AdmissionsRefused")) for m in emitted] == [([1.0], None)]
    lines = [line for line in api_lines if pattern.matches(line)]
    assert len(lines) == 1
    refusal = parse_refusal(lines[0], MINUTE, "1")
    assert refusal is not None
    assert (refusal.quota, refusal.limit, refusal.shadow) == (ACME, 2, True)
    # The enforced quota at the same point: 409, nothing written.
    before = harness.truth("other")
    refused = api.create("other", "c")
    assert (refused.status, refused.json()["error"]["code"]) == (409, "LimitExceeded")
    assert harness.truth("other") == before
    enforced = [line for line in api_lines if pattern.matches(line)][1:]
    assert [parse_refusal(line, MINUTE, "2").shadow for line in enforced] == [False]  # type: ignore[union-attr]
    # Counted exactly, as any admitted create: 3 live, room -1 on shard 0, room + admitted = limit.
    harness.pump()
    harness.check_invariants()
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room, truth.best_effort, truth.eventual) == (3, 3, -1, 3, 3)
    view = api.account("acme")
    assert (view["used"], view["limit"], view["available"], view["mode"]) == (3, 2, 0, "shadow")
    asked = {acct: api.request("GET", f"/accounts/{acct}/admission").json() for acct in ("acme", "other")}
    assert asked == {
        "acme": {"amount": 1, "admitted": True, "free": 0},
        "other": {"amount": 1, "admitted": False, "free": 0},
    }
    # The aggregator makes one shadow Limit Refused event and one enforced: two events for the minute.
    harness.clock.set(MINUTE + timedelta(minutes=2))
    lines = [line for line in api_lines if pattern.matches(line)]
    refusals.aggregate(refusals.payload(*[(MINUTE + timedelta(seconds=i), line) for i, line in enumerate(lines)]))
    due = refusals.due()
    assert sorted(due, key=str) == sorted([Window(ACME, MINUTE, shadow=True), Window(Quota("other"), MINUTE)], key=str)
    assert refusals.emit(*due) == []
    shadow = announced(harness, Window(ACME, MINUTE, shadow=True))
    assert shadow is not None
    assert (shadow[1].refused, shadow[1].limit, shadow[1].shadow) == (1, 2, True)
    assert shadow[1].eventId != Window(ACME, MINUTE).event_id
    enforced_event = announced(harness, Window(Quota("other"), MINUTE))
    assert enforced_event is not None
    assert enforced_event[1].shadow is None
    assert '"shadow"' not in enforced_event[0]  # old subscribers read the event they always did


@pytest.mark.engine
def test_concurrent_creates_past_a_busy_shadow_quotas_limit_are_all_admitted_and_counted(harness: Harness) -> None:
    """Over 4 shards, 10 creates racing for 4 units: every one admitted, those found no room for
    (at least 6) past the limit on shard 0; the counts exact, the shards holding the limit."""
    spread(harness, "acme", 4, shards=4)
    put(harness, "/accounts/acme", {"limit": 4, "mode": "shadow"})
    creates = 10
    stores = patient_stores(harness, creates)
    results = run_together(creates, lambda i: create_carefully(harness, i, process(4, seed=i), stores[i]))
    admitted = [r for r in results if isinstance(r, accounts.Created)]
    assert len(admitted) == creates, [r for r in results if not isinstance(r, accounts.Created)]
    shadowed = [r for r in admitted if r.shadowed is not None]
    assert len(shadowed) >= creates - 4
    assert all(isinstance(r.shadowed, LimitExceeded) and r.resource.shard == 0 for r in shadowed)
    harness.pump()
    harness.check_invariants()
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room, truth.eventual, truth.leases) == (10, 10, -6, 10, 0)


def busy_shadow_quota_at_its_limit(harness: Harness) -> tuple[Directory, Resource]:
    """Acme in shadow mode over 4 shards, its limit of 8 filled by 4 resources of 2 units; one of
    them admitted by a shard other than shard 0."""
    put(harness, "/accounts/acme", {"limit": 8, "mode": "shadow"})
    assert harness.wiring.api_store.set_active(ACME, 1, 1, 4)
    directory = process(4, seed=3)
    made = [
        accounts.create_resource(
            harness.wiring.api_store,
            ACME,
            NewResource(f"r{i}", amount=2),
            None,
            harness.clock.timestamp,
            directory=directory,
        )
        for i in range(4)
    ]
    return directory, next(created.resource for created in made if created.resource.shard > 0)


def grow_past_the_limit(harness: Harness, directory: Directory, resource: Resource) -> None:
    """Grow `resource` by 3 units past the limit: admitted on its own shard, each unit from shard
    0's room (3 below zero), no other shard below zero, one refusal spared."""
    spared: list[LimitExceeded] = []
    grown = accounts.resize_resource(
        harness.wiring.api_store,
        ACME,
        resource.resource_id,
        5,
        harness.clock.timestamp,
        directory=directory,
        on_shadow=spared.append,
    )
    assert (grown.amount, grown.shard) == (5, resource.shard)
    assert [(refusal.limit, refusal.units) for refusal in spared] == [(8, 3)]
    shards = {shard.shard: shard for shard in harness.wiring.api_store.read_shards(ACME, range(4))}
    assert shards[0].room == -3
    assert all(shard.room >= 0 for index, shard in shards.items() if index), shards
    assert sum(shard.room + shard.admitted for shard in shards.values()) == 8
    assert shards[resource.shard].leases == ()
    harness.check_invariants()


@pytest.mark.engine
def test_a_growth_on_another_shard_goes_past_a_shadow_quotas_limit_with_only_shard_0_below_zero(
    harness: Harness,
) -> None:
    """A busy shadow quota's resource admitted by shard k > 0 grows past the limit: shard k admits
    the units and shard 0's room gives them (below zero), in one transaction, so no other shard's
    room goes negative; switched to enforce, the next growth is refused with nothing written."""
    directory, resource = busy_shadow_quota_at_its_limit(harness)
    grow_past_the_limit(harness, directory, resource)
    put(harness, "/accounts/acme", {"limit": 8, "mode": "enforce"})
    before = harness.truth("acme")
    with pytest.raises(LimitExceeded):
        accounts.resize_resource(
            harness.wiring.api_store, ACME, resource.resource_id, 6, harness.clock.timestamp, directory=directory
        )
    assert harness.truth("acme") == before
    harness.pump()
    harness.check_invariants()
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room, truth.eventual) == (11, 11, -3, 11)


def test_a_growth_past_a_shadow_quotas_limit_whose_transaction_landed_unanswered_is_applied_once(
    harness: Harness, faults: Faults
) -> None:
    """The transaction of shard 0's room and the resource's shard lands and its answer is lost (a
    500 the SDK retries): the retry is recognised, the units are taken once."""
    directory, resource = busy_shadow_quota_at_its_limit(harness)
    landed = faults.lands_then_500(
        "TransactWriteItems", lambda params: "#lease" in str(params["TransactItems"]) and ":minus" in str(params)
    )
    grow_past_the_limit(harness, directory, resource)
    assert landed == [1]
    harness.pump()
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room, truth.eventual, truth.leases) == (11, 11, -3, 11, 0)


@pytest.mark.engine
def test_shadow_to_enforce_refuses_until_usage_is_below_the_limit_and_back_to_shadow_admits(harness: Harness) -> None:
    api = harness.api
    first = harness.api.request("PUT", "/accounts/acme", {"limit": 2, "mode": "shadow"})
    ids = [api.create("acme", name).json()["resourceId"] for name in "abc"]  # the third past the limit
    enforced = harness.api.request("PUT", "/accounts/acme", {"limit": 2, "mode": "enforce"})
    assert (enforced.status, enforced.json()["mode"]) == (200, "enforce")
    assert enforced.headers["ETag"] != first.headers["ETag"]  # a change of the mode alone is a new version
    assert api.create("acme", "d").status == 409
    assert api.delete("acme", ids[0]).status == 204
    assert api.create("acme", "d").status == 409  # 2 live of 2: still full, as a lowered limit
    assert api.delete("acme", ids[1]).status == 204
    assert api.create("acme", "d").status == 201
    assert api.create("acme", "e").status == 409
    assert put(harness, "/accounts/acme", {"limit": 2, "mode": "shadow"})["mode"] == "shadow"
    assert api.create("acme", "e").status == 201
    assert put(harness, "/accounts/acme", {"limit": 5})["mode"] == "shadow"  # omitted: the mode stays
    harness.pump()
    harness.check_invariants()
    changes = [(c.oldLimit, c.newLimit, c.oldMode, c.newMode) for c in limit_changes(harness, ACME)]
    assert changes == [(2, 2, "shadow", "enforce"), (2, 2, "enforce", "shadow"), (2, 5, "shadow", "shadow")]
    plain = put(harness, "/accounts/other", {"limit": 1})
    put(harness, "/accounts/other", {"limit": 3})
    assert plain["mode"] == "enforce"
    assert [(c.oldMode, c.newMode) for c in limit_changes(harness, Quota("other"))] == [(None, None)]


@pytest.mark.engine
def test_a_plans_shadow_quota_reaches_its_accounts_and_an_override_can_enforce_it(harness: Harness) -> None:
    api = harness.api
    plan = put(harness, "/plans/pro", {"quotas": {"seats": {"limit": 1, "mode": "shadow"}, "projects": {"limit": 1}}})
    assert plan["quotas"] == {"seats": {"limit": 1, "mode": "shadow"}, "projects": {"limit": 1}}
    account = put(harness, "/accounts/acme", {"plan": "pro"})
    assert {t["type"]: (t["limitSource"], t["mode"]) for t in account["types"]} == {
        "projects": ("plan", "enforce"),
        "seats": ("plan", "shadow"),
    }
    assert [api.create("acme", n, resource_type="seats").status for n in "ab"] == [201, 201]
    assert [api.create("acme", n, resource_type="projects").status for n in "ab"] == [201, 409]
    override = put(harness, "/accounts/acme/types/seats", {"limit": 1, "mode": "enforce"})
    assert (override["limitSource"], override["mode"]) == ("override", "enforce")
    assert api.create("acme", "c", resource_type="seats").status == 409
    removed = harness.api.request("DELETE", "/accounts/acme/types/seats/override")
    assert (removed.status, removed.json()["mode"]) == (200, "shadow")
    assert api.create("acme", "c", resource_type="seats").status == 201
    # The plan's quota back to enforce: the account's type follows with the plan's next version.
    put(harness, "/plans/pro", {"quotas": {"seats": {"limit": 1}, "projects": {"limit": 1}}})
    put(harness, "/accounts/acme", {"plan": "pro"})
    assert api.request("GET", "/accounts/acme/types/seats").json()["mode"] == "enforce"
    assert api.create("acme", "d", resource_type="seats").status == 409
    harness.pump()
    harness.check_invariants()
    assert harness.truth(SEATS).live == 3


HOSTILE_MODES: list[Any] = [1, True, None, "Shadow", "", ["shadow"], {"mode": "shadow"}, "shadow " * 2]


@pytest.mark.parametrize("mode", HOSTILE_MODES)
def test_a_hostile_mode_is_400_with_nothing_written(harness: Harness, mode: Any) -> None:
    api = harness.api
    for url, body in (
        ("/accounts/acme", {"limit": 5, "mode": mode}),
        ("/accounts/acme/types/seats", {"limit": 5, "mode": mode}),
        ("/plans/pro", {"quotas": {"seats": {"limit": 5, "mode": mode}}}),
    ):
        answer = api.request("PUT", url, body)
        assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError"), (url, answer.text)
    assert api.request("GET", "/accounts/acme").status == 404
    assert api.request("GET", "/plans/pro").status == 404


def test_a_periodic_quota_cannot_be_shadow(harness: Harness) -> None:
    api = harness.api
    for url, body in (
        ("/accounts/acme/types/builds", {"limit": 5, "mode": "shadow", "period": "month"}),
        ("/plans/pro", {"quotas": {"builds": {"limit": 5, "mode": "shadow", "period": "month"}}}),
    ):
        answer = api.request("PUT", url, body)
        assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError"), answer.text
    assert api.request("GET", "/accounts/acme").status == 404
    put(harness, "/accounts/acme/types/builds", {"limit": 5, "period": "month"})
    before = harness.truth(Quota("acme", "builds"))
    answer = api.request("PUT", "/accounts/acme/types/builds", {"limit": 5, "mode": "shadow"})
    assert (answer.status, answer.json()["error"]["code"]) == (400, "ValidationError"), answer.text
    assert harness.truth(Quota("acme", "builds")) == before
    assert api.request("GET", "/accounts/acme/types/builds").json()["mode"] == "enforce"


def test_a_growth_past_a_shadow_quotas_limit_is_made_and_logged_as_a_shadow_refusal(
    harness: Harness, api_lines: list[str]
) -> None:
    api = harness.api
    pattern = FilterPattern.parse(filter_pattern())
    put(harness, "/accounts/acme", {"limit": 5, "mode": "shadow"})
    put(harness, "/accounts/other", {"limit": 5})
    for account in ("acme", "other"):
        kept = api.request("POST", f"/accounts/{account}/resources", {"name": "a", "amount": 4}).json()
        grown = api.request("PATCH", f"/accounts/{account}/resources/{kept['resourceId']}", {"amount": 7})
        assert grown.status == (200 if account == "acme" else 409), grown.text
    lines = [parse_refusal(line, MINUTE, "1") for line in api_lines if pattern.matches(line)]
    assert [(r.quota, r.units, r.shadow) for r in lines if r is not None] == [
        (ACME, 3, True),
        (Quota("other"), 3, False),
    ]
    harness.pump()
    harness.check_invariants()
    truth = harness.truth("acme")
    assert (truth.live, truth.admitted, truth.room, truth.eventual) == (7, 7, -2, 7)
    assert harness.truth("other").live == 4
