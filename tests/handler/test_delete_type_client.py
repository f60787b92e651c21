"""The Python client's `delete_type` through the real API handler, served on 127.0.0.1 by the
bridge (tests/handler/client_bridge.py) on this tier's table."""

from __future__ import annotations

import pytest
from hybrid_counter_client import (
    AccountBeingDeleted,
    AccountNotFound,
    DefaultTypeNotDeletable,
    LimitsClient,
    PlanType,
    TypeDeletion,
    TypeNotEmpty,
)

from tests.handler.conftest import Harness, Kind

pytestmark = pytest.mark.client


@pytest.fixture
def kind(harness: Harness) -> Kind:
    """The account's default type (its routes without a type): the test names its types itself."""
    return Kind(harness, None)


@pytest.mark.engine
def test_delete_type_refuses_a_holding_type_then_deletes_its_resources_and_removes_it(
    client: LimitsClient, harness: Harness
) -> None:
    client.put_type_limit("acme", "seats", limit=3)
    client.create_typed_resource("acme", "seats", name="s1")
    with pytest.raises(TypeNotEmpty):
        client.delete_type("acme", "seats")
    with pytest.raises(DefaultTypeNotDeletable):
        client.delete_type("acme", "default")
    assert client.delete_type("acme", "seats", delete_resources=True) == TypeDeletion("acme", "seats", removed=False)
    harness.pump()  # the stream counts the delete
    assert client.delete_type("acme", "seats", delete_resources=True).removed
    with pytest.raises(AccountNotFound):
        client.get_type("acme", "seats")


def test_delete_type_of_a_plans_type_is_plan_type(client: LimitsClient) -> None:
    client.put_plan("team", quotas={"seats": {"limit": 2}})
    client.put_account("globex", plan="team")
    with pytest.raises(PlanType):
        client.delete_type("globex", "seats", delete_resources=True)


def test_delete_account_refuses_its_creates_and_a_repeat_answers_the_same_deletion(client: LimitsClient) -> None:
    client.put_account("globex", limit=2)
    client.create_resource("globex", "r1")
    deletion = client.delete_account("globex")
    assert deletion.account_id == "globex"
    assert client.delete_account("globex") == deletion
    with pytest.raises(AccountNotFound):
        client.create_resource("globex", "r2")
    with pytest.raises(AccountBeingDeleted):
        client.put_account("globex", limit=2)
