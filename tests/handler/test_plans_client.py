"""The Python client's plan calls (`put_plan`, `get_plan`, `list_plans`, `put_account(plan=)`,
`remove_override`) through the real API handler, served on 127.0.0.1 by the bridge
(tests/handler/client_bridge.py) on this tier's table."""

from __future__ import annotations

import pytest
from hybrid_counter_client import (
    LimitsClient,
    OverrideNotFound,
    PlanNotFound,
    PreconditionFailed,
    ValidationError,
)

from tests.handler.client_bridge import Bridge
from tests.handler.conftest import Harness, Kind

pytestmark = pytest.mark.client

PRO = {
    "seats": {"limit": 50},
    "projects": {"limit": 10, "thresholds": [50, 90]},
    "builds": {"limit": 1000, "period": "month"},
}


@pytest.fixture
def kind(harness: Harness) -> Kind:
    """The account's default type only: a plan's calls are the account's, not one type's."""
    return Kind(harness, None)


def test_a_plan_is_put_read_listed_and_versioned(client: LimitsClient, bridge: Bridge) -> None:
    created = client.put_plan("pro", quotas=PRO)
    assert (created.plan, created.version, created.etag) == ("pro", 1, '"1"')
    assert created.quotas["projects"] == {"limit": 10, "thresholds": [50, 90]}
    assert client.get_plan("pro") == created
    changed = client.put_plan("pro", quotas={**PRO, "seats": {"limit": 60}}, if_match=created.etag)
    assert changed.version == 2
    with pytest.raises(PreconditionFailed):
        client.put_plan("pro", quotas=PRO, if_match=created.etag)
    assert bridge.seen[-1] == ("PUT", '"1"')
    client.put_plan("free", quotas={"seats": {"limit": 3}})
    assert [plan.plan for plan in client.list_plans(page_size=1)] == ["free", "pro"]
    with pytest.raises(PlanNotFound):
        client.get_plan("nope")


def test_an_account_on_a_plan_its_override_and_the_overrides_removal(client: LimitsClient) -> None:
    client.put_plan("pro", quotas=PRO)
    account = client.put_account("acme", plan="pro")
    assert (account.plan, account.limit, account.limit_source) == ("pro", 0, "account")
    assert {t.type: (t.limit, t.limit_source) for t in account.types or []} == {
        "builds": (1000, "plan"),
        "projects": (10, "plan"),
        "seats": (50, "plan"),
    }
    override = client.put_type_limit("acme", "seats", limit=60)
    assert (override.limit, override.limit_source) == (60, "override")
    restored = client.remove_override("acme", "seats")
    assert (restored.limit, restored.limit_source) == (50, "plan")
    with pytest.raises(OverrideNotFound):
        client.remove_override("acme", "seats")
    assert client.get_account("acme").plan == "pro"
    with pytest.raises(PlanNotFound):
        client.put_account("other", plan="nope")
    with pytest.raises(ValidationError):
        client.put_account("other", plan="pro", limit=5)


def test_an_account_without_a_plan_reads_as_before(client: LimitsClient) -> None:
    account = client.put_account("acme", limit=3)
    assert (account.plan, account.limit_source, account.limit) == (None, "account", 3)
    assert client.put_type_limit("acme", "seats", limit=4).limit_source == "account"


def test_an_expiring_grant_through_the_client(client: LimitsClient, harness: Harness) -> None:
    """`put_type_limit(expires_at=)` gives a grant, which every read says; a type without a plan
    behind it is a ValidationError."""
    from datetime import timedelta

    from functions.core.periods import format_instant

    client.put_plan("pro", quotas=PRO)
    client.put_account("acme", plan="pro")
    ends = format_instant(harness.clock.now() + timedelta(days=7))
    granted = client.put_type_limit("acme", "seats", limit=60, expires_at=ends)
    assert (granted.limit, granted.limit_source, granted.expires_at) == (60, "override", ends)
    assert client.get_type("acme", "seats").expires_at == ends
    assert {t.type: t.expires_at for t in client.get_account("acme").types or []}["seats"] == ends
    with pytest.raises(ValidationError):
        client.put_type_limit("acme", "extra", limit=4, expires_at=ends)


def test_shadow_mode_through_the_client(client: LimitsClient) -> None:
    """`mode=` on `put_account` and `put_type_limit`, and a plan's quota's `"mode"`: every read says
    the quota's mode; a shadow quota admits past its limit, an enforced one is LimitExceeded."""
    from hybrid_counter_client import LimitExceeded

    account = client.put_account("acme", limit=1, mode="shadow")
    assert (account.mode, client.put_account("other", limit=1).mode) == ("shadow", "enforce")
    client.create_resource("acme", "a")
    assert client.create_resource("acme", "b").name == "b"  # past the limit, admitted
    client.create_resource("other", "a")
    with pytest.raises(LimitExceeded):
        client.create_resource("other", "b")
    plan = client.put_plan("pro", quotas={"seats": {"limit": 1, "mode": "shadow"}})
    assert plan.quotas["seats"] == {"limit": 1, "mode": "shadow"}
    joined = client.put_account("acme", plan="pro")
    assert [(t.type, t.mode) for t in joined.types or []] == [("seats", "shadow")]
    enforced = client.put_type_limit("acme", "seats", limit=1, mode="enforce")
    assert (enforced.limit_source, enforced.mode) == ("override", "enforce")
    assert [t.mode for t in client.list_types("acme").items] == ["shadow", "enforce"]
    with pytest.raises(ValidationError):
        client.put_type_limit("acme", "seats", limit=1, mode="loud")


def test_accounts_are_listed_by_the_client_sync_and_async(client: LimitsClient, bridge: Bridge) -> None:
    import asyncio

    from hybrid_counter_client import AccountEntry, AsyncLimitsClient, PlanRollout

    from tests.client.conftest import Waits, static_session

    client.put_plan("pro", quotas=PRO)
    client.put_account("acme", limit=3)
    for account in ("p2", "p1"):
        client.put_account(account, plan="pro")
    on_pro = [AccountEntry("p1", "pro", 1), AccountEntry("p2", "pro", 1)]
    assert list(client.list_accounts(page_size=1)) == [AccountEntry("acme"), *on_pro]
    assert list(client.list_accounts(plan="pro")) == on_pro
    assert client.list_accounts_page(plan="pro", limit=1).next_cursor is not None
    assert client.get_plan("pro").rollout == PlanRollout(version=1, accounts=2, updated=2)

    async def listed() -> list[AccountEntry]:
        waits = Waits()
        async with AsyncLimitsClient(bridge.url, static_session(), clock=waits.clock, sleep=waits.async_sleep) as made:
            return [entry async for entry in made.list_accounts(page_size=2)]

    assert asyncio.run(listed()) == [AccountEntry("acme"), *on_pro]
