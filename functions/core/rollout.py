"""A plan change reaching every account on it (docs/plans.md, "A plan change reaches every account").

A plan's new version is written by its PUT; its stream record invokes the pager, which reads the
plan's partition of the account registry (the accounts index) a page at a time and queues the ids
of the accounts still behind the version, a few to a message, with a message to page on after the
last one read. The worker takes each message from the queue: a page message pages on, an apply
message gives each of its accounts the version through the per-account application a PUT of the
account on the plan makes (`plans.join_plan`: each type's change with a token derived from the
plan, its version, the account and the type, so it lands once; overrides stand; the membership
last). Every message names the version it is for: one whose version is no longer the plan's is
dropped (a later change supersedes it, and pages its accounts itself).

Resumable: a crash anywhere leaves a message in the queue (or the stream record unprocessed), and
its retry skips what landed: a page re-queues only accounts still behind, an account already at the
version is skipped, a type already given the version is not written again.

An account is given the version as if by the PUT that put it on the plan (received when that PUT
was: the membership's `plan_set_at`), so a PUT received later (a move to another plan, a type's
own limit) is never overwritten by a rollout, and the rollout of an account moved meanwhile writes
nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from functions.core import plans
from functions.core.accounts import Clock, Deadline
from functions.core.errors import StoreUnavailable
from functions.core.plans import AccountEntry, PlansStore

# A page of the registry the pager (and the worker, paging on) reads at once, and the accounts an
# apply message carries: an account's application is about 20 calls, so a message is done well
# within the worker's timeout, and a retry redoes few.
PAGE_SIZE = 250
ACCOUNTS_PER_MESSAGE = 10
ROLLOUT_CALLER = "plan-rollout"
# An account's application, given again while its membership moves under it (a type returned to
# the plan meanwhile): then the message fails and is retried.
APPLY_ATTEMPTS = 3


@dataclass(frozen=True)
class Page:
    """Page the plan's accounts on after `after` (None: from the first)."""

    plan: str
    version: int
    after: str | None = None


@dataclass(frozen=True)
class Apply:
    """Give these accounts the plan's `version`."""

    plan: str
    version: int
    accounts: tuple[str, ...]


Message = Page | Apply


class RolloutQueue(Protocol):
    def send(self, messages: Sequence[Message]) -> None:
        """Queue every message (in batches); raises if any was not queued (the caller is retried)."""
        ...


class RolloutStore(PlansStore, Protocol):
    def registry_page(self, plan: str, limit: int, after: str | None) -> tuple[list[AccountEntry], str | None]:
        """Up to `limit` of the plan's accounts after `after`, by id, and the last one's id if
        there may be more (None: the plan's accounts end here)."""
        ...


@dataclass(frozen=True)
class Progress:
    """How far the plan's current version has reached: `updated` of its `accounts` have it."""

    version: int
    accounts: int
    updated: int


def page(store: RolloutStore, queue: RolloutQueue, message: Page) -> int:
    """Queue the page's accounts still behind the version, then the next page; how many were
    queued. Nothing when the plan has moved past the version (its own rollout pages)."""
    current = store.read_plan(message.plan)
    if current is None or current.version != message.version:
        return 0
    entries, last = store.registry_page(message.plan, PAGE_SIZE, message.after)
    behind = [
        entry.account_id for entry in entries if entry.plan == message.plan and entry.plan_version < message.version
    ]
    queued: list[Message] = [
        Apply(message.plan, message.version, tuple(behind[start : start + ACCOUNTS_PER_MESSAGE]))
        for start in range(0, len(behind), ACCOUNTS_PER_MESSAGE)
    ]
    if last is not None:
        queued.append(Page(message.plan, message.version, last))  # after its accounts: a crash re-pages
    if queued:
        queue.send(queued)
    return len(behind)


def apply(store: RolloutStore, message: Apply, clock: Clock, in_time: Deadline) -> int:
    """Give each account the version; how many were changed (an account already at it, moved to
    another plan, or a version superseded, is not)."""
    changed = 0
    for account_id in message.accounts:
        current = store.read_plan(message.plan)
        if current is None or current.version != message.version:
            return changed  # superseded: the later version's rollout gives it
        if apply_version(store, account_id, message.plan, message.version, clock, in_time):
            changed += 1
    return changed


def apply_version(
    store: RolloutStore, account_id: str, plan: str, version: int, clock: Clock, in_time: Deadline
) -> bool:
    """Give the account the plan's version, as the PUT that put it on the plan would now; False if
    it has it already, or is on another plan (or none)."""
    read = store.read_account(account_id)
    given = False
    for _ in range(APPLY_ATTEMPTS):
        if read is None or read.default.plan != plan or read.default.plan_version >= version:
            return given
        # A type returned to the plan meanwhile dated the membership later (plans.return_to_plan):
        # this application's membership was then refused, and it is given again as of that date.
        read = plans.join_plan(store, account_id, plan, read.default.plan_set_at, clock, in_time, ROLLOUT_CALLER)
        given = True
    raise StoreUnavailable(f"rollout of {plan} to {account_id}: its membership kept changing", may_have_landed=True)


def progress(store: RolloutStore, plan: plans.Plan) -> Progress:
    """The plan's accounts and those given its current version, counted from the registry (every
    page of the plan's partition: exact once the index has caught up with the last membership)."""
    accounts = updated = 0
    after: str | None = None
    while True:
        entries, after = store.registry_page(plan.name, 1000, after)
        accounts += len(entries)
        updated += sum(1 for entry in entries if entry.plan_version >= plan.version)
        if after is None:
            return Progress(plan.version, accounts, updated)


def message_body(message: Message) -> str:
    values: dict[str, Any] = {"plan": message.plan, "version": message.version}
    if isinstance(message, Page):
        values.update(kind="page", after=message.after)
    else:
        values.update(kind="apply", accounts=list(message.accounts))
    return json.dumps(values, separators=(",", ":"), sort_keys=True)


def parse_message(body: str) -> Message:
    """A queued message; ValueError for a body no pager wrote."""
    try:
        values = json.loads(body)
        plan, version, kind = str(values["plan"]), int(values["version"]), values["kind"]
        if kind == "page":
            after = values.get("after")
            return Page(plan, version, None if after is None else str(after))
        if kind == "apply":
            return Apply(plan, version, tuple(str(account) for account in values["accounts"]))
    except (TypeError, KeyError, json.JSONDecodeError) as error:
        raise ValueError(f"not a rollout message: {error}") from error
    raise ValueError(f"not a rollout message: kind {kind!r}")
