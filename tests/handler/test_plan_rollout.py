"""A plan change reaching every account on it (docs/plans.md, functions/core/rollout.py): the pager
(the plan item's stream record) and the worker (the rollout queue, moto's SQS) called in-process as
Lambda calls them, on the handler tier's table; crashes injected in either, and two changes in
quick succession."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from functions.adapters import table_layout
from functions.core import grants, rollout
from functions.core.leases import epoch_ms
from functions.core.model import Quota
from functions.core.periods import format_instant
from functions.shared.wiring import Wiring
from local.filters import matches_any
from tests.handler.conftest import Harness
from tests.handler.test_redrive import sqs_event
from tests.support.faults import Faults
from tests.support.lambda_context import FakeLambdaContext
from tests.support.sessions import new_session
from tests.support.stream import StreamTap, deliver, failed_sequence_numbers

PRO = {"quotas": {"seats": {"limit": 50}, "projects": {"limit": 10}}}
PRO_2 = {"quotas": {"seats": {"limit": 60}, "projects": {"limit": 10}, "builds": {"limit": 5}}}
PRO_3 = {"quotas": {"seats": {"limit": 70}, "projects": {"limit": 12}}}
FREE = {"quotas": {"seats": {"limit": 3}}}


class Rollout:
    """The pager and the worker of one test, on its table, with the rollout queue on moto's server."""

    def __init__(self, harness: Harness, emulator_url: str) -> None:
        from functions.plan_rollout.handler import pager, worker

        self.harness = harness
        self.sqs = boto3.client("sqs", endpoint_url=emulator_url)
        name = f"rollout-{uuid.uuid4().hex[:12]}"
        self.queue_url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        settings = replace(harness.wiring.settings, rollout_queue_url=self.queue_url)
        self.wiring = Wiring(
            settings,
            new_session(),
            harness.backend.endpoint_url,
            harness.clock,
            service_endpoints={"sqs": emulator_url},
        )
        self.faults = Faults(self.wiring)
        self.pager = partial(pager, wiring=self.wiring)
        self.worker = partial(worker, wiring=self.wiring)
        self.tap = StreamTap(harness.backend.streams, harness.backend.stream_arn)
        self.tap.drain()  # what came before the test's own writes

    def records(self) -> list[dict[str, Any]]:
        """The stream's records since the last call, through the pager's filter, as Lambda would."""
        return [record for record in self.tap.drain() if matches_any(table_layout.PLAN_FILTER_PATTERNS, record)]

    def page(self, records: list[dict[str, Any]]) -> list[str]:
        return failed_sequence_numbers(deliver(self.pager, records))

    def take(self) -> list[dict[str, Any]]:
        """Every message queued now, received and deleted (each handed to the worker by the caller)."""
        taken: list[dict[str, Any]] = []
        while messages := self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages"):
            taken += messages
            for message in messages:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return taken

    def work(self, bodies: list[str]) -> list[str]:
        """The worker on these messages, one batch each (its batch size is 1); the failed bodies."""
        failed = []
        for body in bodies:
            answer = self.worker(sqs_event(body), FakeLambdaContext(function_name="plan_worker"))
            if answer["batchItemFailures"]:
                failed.append(body)
        return failed

    def run(self, rounds: int = 50) -> list[str]:
        """Pages then works the queue until it is empty (a failed message is sent again, as SQS
        redelivers it); every body the worker handled, in order."""
        records = self.records()
        assert not records or self.page(records) == []
        handled: list[str] = []
        for _ in range(rounds):
            bodies = [message["Body"] for message in self.take()]
            if not bodies:
                return handled
            handled += bodies
            for body in self.work(bodies):
                self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)
        raise AssertionError("the queue never emptied")


@pytest.fixture
def plan_rollout(harness: Harness, emulator_url: str) -> Rollout:
    return Rollout(harness, emulator_url)


def put_plan(harness: Harness, body: dict[str, Any], name: str = "pro") -> None:
    assert harness.api.request("PUT", f"/plans/{name}", body).status == 200


def join(harness: Harness, account: str, plan: str = "pro") -> None:
    assert harness.api.request("PUT", f"/accounts/{account}", {"plan": plan}).status == 200


def limits(harness: Harness, account: str) -> dict[str, tuple[int, str, int]]:
    """Each named type's limit, its source and its limit version (its ETag: one more per change)."""
    answer = harness.api.request("GET", f"/accounts/{account}")
    assert answer.status == 200
    found = {}
    for view in answer.json()["types"]:
        if view["type"] == "default":
            continue
        etag = harness.api.request("GET", f"/accounts/{account}/types/{view['type']}").headers["ETag"]
        found[view["type"]] = (view["limit"], view["limitSource"], int(etag.strip('"')))
    return found


def plan_of(harness: Harness, account: str) -> tuple[str | None, int | None]:
    entries = harness.api.request("GET", "/accounts?limit=100").json()["items"]
    [entry] = [entry for entry in entries if entry["accountId"] == account]
    return entry.get("plan"), entry.get("planVersion")


ACCOUNTS = [f"a{index:02d}" for index in range(10)]


@pytest.fixture
def on_pro(harness: Harness, plan_rollout: Rollout, monkeypatch: pytest.MonkeyPatch) -> None:
    """10 accounts on pro (pages of 3: four pages, two messages of up to 2 from a full page), one of
    them with an override of seats; one more moved from pro to free. (Each account put on a plan is
    about 20 calls: few accounts, small pages, the same paths as 100,000.)"""
    monkeypatch.setattr(rollout, "PAGE_SIZE", 3)
    monkeypatch.setattr(rollout, "ACCOUNTS_PER_MESSAGE", 2)
    put_plan(harness, PRO)
    put_plan(harness, FREE, "free")
    for account in [*ACCOUNTS, "moved"]:
        join(harness, account)
    assert harness.api.request("PUT", "/accounts/a05/types/seats", {"limit": 99}).status == 200
    join(harness, "moved", "free")
    plan_rollout.run()  # pro's and free's first versions: nobody is behind them


def test_a_plan_change_reaches_every_account_on_it_once(harness: Harness, plan_rollout: Rollout, on_pro: None) -> None:
    before = {account: limits(harness, account) for account in ACCOUNTS}
    put_plan(harness, PRO_2)
    handled = plan_rollout.run()
    assert sum('"kind":"page"' in body for body in handled) == 3  # continuations after pages 1 to 3
    for account in ACCOUNTS:
        given = limits(harness, account)
        assert plan_of(harness, account) == ("pro", 2)
        assert given["builds"][:2] == (5, "plan")  # a type the new version adds
        assert given["projects"] == before[account]["projects"]  # unchanged: not written
        if account == "a05":
            assert given["seats"] == before[account]["seats"]  # its override stands
        else:
            assert given["seats"] == (60, "plan", before[account]["seats"][2] + 1)  # one change, one event
    assert limits(harness, "moved")["seats"][:2] == (3, "plan")  # on free now: pro's change is not its
    assert plan_of(harness, "moved") == ("free", 1)
    # Progress: every account of pro at version 2.
    assert harness.api.request("GET", "/plans/pro").json()["rollout"] == {"version": 2, "accounts": 10, "updated": 10}

    # Every message delivered again (SQS delivers at least once): nothing changes a second time.
    after = {account: limits(harness, account) for account in ACCOUNTS}
    plan_rollout.take()  # the continuations the redelivered page messages queue again
    assert plan_rollout.work(handled) == []
    plan_rollout.run()
    assert {account: limits(harness, account) for account in ACCOUNTS} == after


def test_two_changes_in_quick_succession_end_at_the_later_one(
    harness: Harness, plan_rollout: Rollout, on_pro: None
) -> None:
    before = limits(harness, "a01")
    put_plan(harness, PRO_2)
    put_plan(harness, PRO_3)
    plan_rollout.run()
    for account in ACCOUNTS:
        assert plan_of(harness, account) == ("pro", 3)
        given = limits(harness, account)
        assert given["projects"][:2] == (12, "plan")
        assert given["seats"][:2] == ((99, "override") if account == "a05" else (70, "plan"))
        assert "builds" not in given  # version 2's messages were dropped: nobody was given version 2
    assert limits(harness, "a01")["seats"][2] == before["seats"][2] + 1  # one change, to version 3's


def test_a_worker_crash_mid_message_is_resumed_and_changes_nothing_twice(
    harness: Harness, plan_rollout: Rollout, on_pro: None
) -> None:
    before = {account: limits(harness, account)["seats"] for account in ACCOUNTS}
    put_plan(harness, PRO_2)
    # The worker dies after a type's change landed (its transaction), three times over the rollout.
    plan_rollout.faults.crash_after("TransactWriteItems", times=3)
    plan_rollout.run()
    for account in ACCOUNTS:
        assert plan_of(harness, account) == ("pro", 2)
        if account != "a05":
            assert limits(harness, account)["seats"] == (60, "plan", before[account][2] + 1)


def test_a_pager_crash_mid_pages_is_resumed(harness: Harness, plan_rollout: Rollout, on_pro: None) -> None:
    put_plan(harness, PRO_2)
    records = plan_rollout.records()
    # The stream record's first delivery fails once its page was read (the queue unreached); Lambda retries it.
    plan_rollout.faults.crash_after("Query")
    with pytest.raises(BatchProcessingError):  # the whole batch failed: Lambda retries it
        plan_rollout.page(records)
    assert plan_rollout.take() == []
    # The worker crashes on a page message too: SQS delivers it again.
    assert plan_rollout.page(records) == []
    plan_rollout.faults.crash_after("Query", matches=lambda params: "ExclusiveStartKey" in params)
    plan_rollout.run()
    assert [plan_of(harness, account) for account in ACCOUNTS] == [("pro", 2)] * len(ACCOUNTS)
    assert harness.api.request("GET", "/plans/pro").json()["rollout"] == {"version": 2, "accounts": 10, "updated": 10}


def test_an_account_put_on_the_plan_while_its_change_is_paged_ends_at_the_change(
    harness: Harness, plan_rollout: Rollout
) -> None:
    """The account's PUT read version 1; version 2 is written and paged (the account not on the
    plan yet) before its membership lands: the PUT sees the new version and gives it."""
    from functions.core import plans

    put_plan(harness, PRO)
    plan_rollout.run()
    store = plan_rollout.wiring.api_store

    class ChangedMeanwhile:
        def __init__(self) -> None:
            self.once = True

        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def set_membership(self, account_id: str, plan: str, version: int, received_ms: int) -> bool:
            if self.once:
                self.once = False
                put_plan(harness, PRO_2)
                paged = plan_rollout.run()
                assert paged == []  # the pager paged version 2: nobody on the plan is behind it
            return store.set_membership(account_id, plan, version, received_ms)

    now = partial(harness.clock.now)
    plans.join_plan(
        ChangedMeanwhile(), "late", "pro", harness.clock.epoch_ms(), lambda: now().isoformat(), lambda: True
    )  # type: ignore[arg-type]
    assert plan_of(harness, "late") == ("pro", 2)
    assert limits(harness, "late")["seats"][:2] == (60, "plan")


def test_a_type_returned_to_the_plan_takes_the_plans_later_versions(harness: Harness, plan_rollout: Rollout) -> None:
    """An override removed after the account joined (so received after its membership) and then a
    plan change: the rollout, which gives the plan as of the membership, still reaches the type."""
    put_plan(harness, PRO)
    join(harness, "acme")
    harness.clock.advance(timedelta(seconds=1))
    assert harness.api.request("PUT", "/accounts/acme/types/seats", {"limit": 99}).status == 200
    harness.clock.advance(timedelta(seconds=1))
    assert harness.api.request("DELETE", "/accounts/acme/types/seats/override").status == 200
    harness.clock.advance(timedelta(seconds=1))
    put_plan(harness, PRO_3)
    plan_rollout.run()
    assert plan_of(harness, "acme") == ("pro", 2)
    assert {name: value[:2] for name, value in limits(harness, "acme").items()} == {
        "seats": (70, "plan"),
        "projects": (12, "plan"),
    }


def test_a_grant_ended_takes_the_plans_later_versions(harness: Harness, plan_rollout: Rollout) -> None:
    put_plan(harness, PRO)
    join(harness, "acme")
    harness.clock.advance(timedelta(seconds=1))
    ends = format_instant(harness.clock.now().replace(microsecond=0) + timedelta(seconds=2))
    assert harness.api.request("PUT", "/accounts/acme/types/seats", {"limit": 99, "expiresAt": ends}).status == 200
    harness.clock.advance(timedelta(seconds=3))
    assert grants.end_grant(harness.wiring.api_store, Quota("acme", "seats"), epoch_ms(ends), harness.clock.timestamp)
    assert limits(harness, "acme")["seats"][:2] == (50, "plan")
    put_plan(harness, PRO_3)
    plan_rollout.run()
    assert limits(harness, "acme")["seats"][:2] == (70, "plan")


def test_an_override_removed_while_the_rollout_gives_the_account_ends_at_the_new_version(
    harness: Harness, plan_rollout: Rollout
) -> None:
    """The removal lands after the rollout read the account and before it writes: the rollout's
    writes, dated as of the old membership, are refused, and it gives the version again as of the
    membership the removal dated."""
    put_plan(harness, PRO)
    join(harness, "acme")
    harness.clock.advance(timedelta(seconds=1))
    assert harness.api.request("PUT", "/accounts/acme/types/seats", {"limit": 99}).status == 200
    harness.clock.advance(timedelta(seconds=1))
    put_plan(harness, PRO_3)

    def remove_once(_: Any, done: list[bool] = []) -> None:  # noqa: B006 - the hook's own state
        if not done:
            done.append(True)
            assert harness.api.request("DELETE", "/accounts/acme/types/seats/override").status == 200

    plan_rollout.faults.before_call("TransactWriteItems", remove_once)  # the rollout's first limit change
    plan_rollout.run()
    assert plan_of(harness, "acme") == ("pro", 2)
    assert {name: value[:2] for name, value in limits(harness, "acme").items()} == {
        "seats": (70, "plan"),
        "projects": (12, "plan"),
    }
