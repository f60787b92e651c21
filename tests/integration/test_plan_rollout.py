"""A plan change reaching its accounts through the whole system (docs/plans.md): the plan's PUT,
its stream record through the pager's filtered event source, the rollout queue and its worker, as
`make run` runs them (or a deployment)."""

from __future__ import annotations

import uuid

from hybrid_counter_client import PlanRollout

from local.http_client import poll
from tests.integration.conftest import RunningSystem


def test_a_plan_change_reaches_two_accounts_on_it(running_system: RunningSystem) -> None:
    client = running_system.client
    name = f"p{uuid.uuid4().hex[:10]}"
    accounts = [f"{name}-a", f"{name}-b"]
    client.put_plan(name, quotas={"seats": {"limit": 5}})
    for account in accounts:
        client.put_account(account, plan=name)
    changed = client.put_plan(name, quotas={"seats": {"limit": 8}, "projects": {"limit": 2}})
    assert changed.version == 2
    for account in accounts:
        seats = poll(lambda account=account: client.get_type(account, "seats"), lambda v: v.limit == 8, timeout=60)
        assert seats.limit_source == "plan"
        assert client.get_type(account, "projects").limit == 2
    read = poll(lambda: client.get_plan(name), lambda plan: plan.rollout == PlanRollout(2, 2, 2), timeout=30)
    assert read.rollout == PlanRollout(version=2, accounts=2, updated=2)
