"""The chaos run's account deletion (`--plans`) is taken whatever the clients' timing: on its own
thread at its mark, or once they stopped if they never reached it, and followed by creates sent
after its DELETE was answered, so a run always checks that the fence refuses them.

A script stands in for the product client here, answering as the API answers a deleted account
(202 on the DELETE, then 404 `AccountNotFound` on every create: docs/plans.md, "Lifecycle")."""

from __future__ import annotations

import threading

from hybrid_counter_client.errors import error_for
from hybrid_counter_client.models import AccountDeletion

from chaos.workload import Account, AccountDeleter, ClientOutcomes


class DeletedAccountApi:
    """The API as it answers once the account's DELETE was taken: creates of it are 404."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def delete_account(self, account_id: str) -> AccountDeletion:
        with self.lock:
            self.calls.append(f"DELETE {account_id}")
        return AccountDeletion(account_id=account_id, requested_at="2026-11-28T18:00:00Z")

    def _refused(self, call: str) -> None:
        with self.lock:
            self.calls.append(call)
        raise error_for(404, "AccountNotFound", "no such account", "req-1", retry_after=0)

    def create_resource(self, account_id: str, name: str, **_: object) -> None:
        self._refused(f"POST {account_id}")

    def create_typed_resource(self, account_id: str, resource_type: str, name: str, **_: object) -> None:
        self._refused(f"POST {account_id}/{resource_type}")


DOOMED = [Account("gone-0", limit=40), Account("gone-0", limit=40, resource_type="type-1")]


def test_a_deletion_whose_mark_the_clients_never_reached_is_taken_once_they_stop_and_a_create_follows_it() -> None:
    """The failure seen in CI: the clients' work ended before the deletion, so no create came after
    its DELETE and the run had no refused create to show."""
    api, outcomes, forgotten = DeletedAccountApi(), ClientOutcomes(), []
    deleter = AccountDeleter(api, DOOMED, outcomes, operations=150, forget=forgotten.append)
    deleter.start()
    deleter.finish()  # no client answered: its mark (75 answers) never came
    assert forgotten == ["gone-0"]
    assert deleter.deletion is not None
    assert deleter.deleted_after is not None
    assert api.calls == ["DELETE gone-0", "POST gone-0", "POST gone-0/type-1"]
    assert outcomes.statuses["create 404"] == 2
    assert all(sent > deleter.deleted_after for sent in outcomes.first_sent.values())
    assert deleter.made == ["gone-0: deleted, requested at 2026-11-28T18:00:00Z"]


def test_a_deletion_is_taken_at_its_mark_while_the_clients_work() -> None:
    api, outcomes = DeletedAccountApi(), ClientOutcomes()
    deleter = AccountDeleter(api, DOOMED, outcomes, operations=150, forget=lambda _: None)
    deleter.start()
    for _ in range(75):
        outcomes.note("create", 201)
    deleter.join(timeout=30)  # it ends once it deleted, before anyone asks it to finish
    assert not deleter.is_alive()
    assert api.calls[0] == "DELETE gone-0"
    assert outcomes.deleted_accounts == {"gone-0"}
    deleter.finish()
    assert api.calls.count("DELETE gone-0") == 1  # once, not again at the end
