"""An account's deletion through the whole system (docs/plans.md, "Lifecycle"): the DELETE of an
account with resources of two types is accepted, every create of it is refused from then on, and
its Account Deleted event reaches a subscriber of the stack's bus once. Its erasure, a sweep at
least a minute later, is the handler tier's (tests/handler/test_delete_account.py): waiting for it
here would cost the tier a minute and more."""

from __future__ import annotations

import pytest
from hybrid_counter_client import AccountNotFound

from functions.usage_events.models import AccountDeleted
from local.http_client import poll
from local.product import new_account
from tests.integration.conftest import RunningSystem
from tests.integration.test_usage_events import Subscription, subscription  # noqa: F401 - a fixture


def test_a_deleted_account_refuses_creates_and_announces_its_deletion_once(
    running_system: RunningSystem,
    subscription: Subscription,  # noqa: F811 - the fixture imported above
) -> None:
    client = running_system.client
    account_id = new_account(client, "leaving", limit=5)
    client.put_type_limit(account_id, "seats", limit=2)
    client.create_resource(account_id, "r1", idempotency_key="order-1")
    client.create_typed_resource(account_id, "seats", "s1")

    deletion = client.delete_account(account_id)
    assert client.delete_account(account_id) == deletion  # a repeat: the same deletion
    with pytest.raises(AccountNotFound):
        client.create_resource(account_id, "r1", idempotency_key="order-1")  # a replay too
    with pytest.raises(AccountNotFound):
        client.create_typed_resource(account_id, "seats", "s2")

    def deleted() -> list[AccountDeleted]:
        received = [event for event in subscription.receive() if event["detail-type"] == AccountDeleted.DETAIL_TYPE]
        details = [AccountDeleted.model_validate(event["detail"]) for event in received]
        return [detail for detail in details if detail.accountId == account_id]

    [event] = poll(deleted, lambda found: len(found) >= 1, 60)
    assert event.resourceTypes == ["default", "seats"]
    assert len(deleted()) == 1
