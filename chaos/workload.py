"""The clients of a chaos run: concurrent creates and deletes over HTTP, as careful callers make them.

Every create carries an Idempotency-Key, and a create or delete that fails with a 5xx (or no
answer) is retried with the same key. Clients remember what the API acknowledged, because
afterwards the checks compare that with what exists.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from functions.core.model import DEFAULT_RESOURCE_TYPE, Quota, idempotent_resource_id
from local.http_client import HttpApi, Reply

RETRIES = 8


@dataclass
class Account:
    """What the clients work on: one limit of an account, its default type's unless named. An
    account with several types is several of these, which the clients race across."""

    account_id: str
    limit: int
    hot: bool = False
    fatal: bool = False  # every transaction on it is made to fail: its records must end in DLQ 2
    resource_type: str = DEFAULT_RESOURCE_TYPE

    @property
    def quota(self) -> Quota:
        return Quota(self.account_id, self.resource_type)

    @property
    def name(self) -> str:
        """How outcomes and reports name it: the account, and its type when not the default."""
        return str(self.quota)

    @property
    def path(self) -> str:
        """Its route: the account's for the default type, the type's otherwise."""
        account = f"/accounts/{self.account_id}"
        return account if self.quota.is_default else f"{account}/types/{self.resource_type}"


@dataclass
class ClientOutcomes:
    """What the API answered the clients: the creates and deletes it acknowledged per account (and
    type: keyed by `Account.name`), what stayed unknown, every status; shared by the client threads."""

    acknowledged: dict[str, set[str]] = field(default_factory=dict)  # created (201/200), not deleted
    deleted: dict[str, set[str]] = field(default_factory=dict)  # deletes acknowledged (204 or 404 on retry)
    unresolved: dict[str, set[str]] = field(default_factory=dict)  # outcome unknown after all retries
    deleting: Counter[str] = field(default_factory=Counter)  # resource ids with a delete in progress
    # A delete answered 404 for a resource that was live when it asked, that no other client was
    # deleting and that no earlier attempt of its own may have deleted: the answer hid what happened.
    wrong_404s: list[str] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    creates_per_type: Counter[str] = field(default_factory=Counter)  # acknowledged creates by resource type
    refused: Counter[str] = field(default_factory=Counter)  # creates answered 409 LimitExceeded, by quota
    retries: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, kind: str, status: int | str) -> None:
        with self.lock:
            self.statuses[f"{kind} {status}"] += 1


def attempt(
    api: HttpApi, method: str, path: str, body: object = None, headers: dict[str, str] | None = None
) -> Reply | None:
    try:
        return api.request(method, path, body, headers)
    except OSError:  # connection refused or reset, timeout: no answer at all
        return None


def run_clients(
    api: HttpApi, accounts: list[Account], operations: int, clients: int, seed: int, outcomes: ClientOutcomes
) -> None:
    remaining = [operations]
    lock = threading.Lock()

    def take() -> bool:
        with lock:
            if remaining[0] <= 0:
                return False
            remaining[0] -= 1
            return True

    def client(index: int) -> None:
        rng = random.Random(f"{seed}/client/{index}")  # noqa: S311 - a reproducible workload
        while take():
            hot = [a for a in accounts if a.hot]
            account = rng.choice(hot) if hot and rng.random() < 0.4 else rng.choice(accounts)
            with outcomes.lock:
                live = sorted(outcomes.acknowledged.get(account.name, set()))
            if live and rng.random() < 0.4:
                delete(api, account, rng.choice(live), outcomes)
            else:
                create(api, account, f"k-{uuid.UUID(int=rng.getrandbits(128))}", outcomes)

    threads = [threading.Thread(target=client, args=(i,), name=f"chaos-client-{i}") for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class LimitChanger(threading.Thread):
    """An admin beside the clients who changes limits: while they work, at even steps of their
    progress, in turn, lowers a quota below its limit to its usage or under it (100% crossed with
    no count moving), raises one well above its usage, sets one back to what it was; and once they
    stopped (`finish`), lowers one more, whose crossing no later count can announce instead
    (docs/events.md, "Limit Changed")."""

    KINDS = ("lower", "raise", "restore")

    def __init__(
        self, api: HttpApi, accounts: list[Account], outcomes: ClientOutcomes, operations: int, changes: int, seed: int
    ) -> None:
        super().__init__(name="chaos-limit-changer", daemon=True)
        self._api, self._accounts, self._outcomes, self._changes = api, accounts, outcomes, changes
        self._marks = [operations * (index + 1) // changes for index in range(changes - 1)]
        self._rng = random.Random(f"{seed}/limits")  # noqa: S311 - a reproducible workload
        self.stop = threading.Event()
        self.made: list[str] = []  # "<quota> <old> -> <new>", as the admin asked

    def run(self) -> None:
        for index, mark in enumerate(self._marks):
            while self._progress() < mark:
                if self.stop.wait(0.05):
                    return
            self._change(self.KINDS[index % len(self.KINDS)])

    def finish(self) -> None:
        """Once the clients stopped: the last change, a lowering."""
        self.stop.set()
        self.join()
        if self._changes:
            self._change("lower")

    def _progress(self) -> int:
        with self._outcomes.lock:
            return sum(self._outcomes.statuses.values())

    def _change(self, kind: str) -> None:
        for account in self._rng.sample(self._accounts, len(self._accounts)):
            view = self._get(account)
            if view is None:
                continue
            used, limit = int(view["used"]), int(view["limit"])
            if kind == "lower" and 0 < used < limit:
                new = max(1, used - self._rng.randint(0, 2))
            elif kind == "raise":
                new = used + self._rng.randint(4, 20)
            elif kind == "restore":
                new = account.limit
            else:
                continue
            if new != limit and self._put(account, new):
                self.made.append(f"{account.name} {limit} -> {new}")
                return

    def _get(self, account: Account) -> dict[str, Any] | None:
        for _ in range(RETRIES):
            reply = attempt(self._api, "GET", account.path)
            if reply is not None and reply.status == 200:
                return dict(reply.body)
            time.sleep(0.05)
        return None

    def _put(self, account: Account, limit: int) -> bool:
        """Retried on a 5xx or no answer, as the careful clients do, with one Idempotency-Key over
        its attempts: a retry of a PUT that landed and lost its answer is that PUT, and changes
        nothing again (docs/admission.md, "Limit changes")."""
        key = {"Idempotency-Key": str(uuid.uuid4())}
        for _ in range(RETRIES):
            reply = attempt(self._api, "PUT", account.path, {"limit": limit}, key)
            if reply is not None and reply.status < 500:
                return reply.status == 200
            time.sleep(0.05)
        return False


def create(api: HttpApi, account: Account, key: str, outcomes: ClientOutcomes) -> None:
    path = f"{account.path}/resources"
    resource_id = idempotent_resource_id(account.quota, key)
    for attempt_number in range(RETRIES):
        reply = attempt(api, "POST", path, {"name": key}, {"Idempotency-Key": key})
        status = reply.status if reply else "no-answer"
        outcomes.note("create", status)
        if reply is not None and reply.status in (200, 201):
            with outcomes.lock:
                outcomes.acknowledged.setdefault(account.name, set()).add(resource_id)
                outcomes.unresolved.get(account.name, set()).discard(resource_id)
                outcomes.creates_per_type[account.resource_type] += 1
            return
        if reply is not None and reply.status == 409 and _code(reply) == "LimitExceeded":
            with outcomes.lock:
                outcomes.refused[account.name] += 1
        if reply is not None and reply.status < 500:
            if attempt_number:  # an earlier try may have created it before failing
                with outcomes.lock:
                    outcomes.unresolved.setdefault(account.name, set()).add(resource_id)
            return  # 409 at the limit, or another answer that a retry would not change
        with outcomes.lock:
            outcomes.retries += 1
            outcomes.unresolved.setdefault(account.name, set()).add(resource_id)
        time.sleep(0.02 * (attempt_number + 1))


def _code(reply: Reply) -> str:
    """The error envelope's code."""
    error = reply.body.get("error") if isinstance(reply.body, dict) else None
    return str(error.get("code", "")) if isinstance(error, dict) else ""


def delete(api: HttpApi, account: Account, resource_id: str, outcomes: ClientOutcomes) -> None:
    path = f"{account.path}/resources/{resource_id}"
    with outcomes.lock:
        others = outcomes.deleting[resource_id] > 0  # another client may win the race: its 404 is fair
        outcomes.deleting[resource_id] += 1
    try:
        for attempt_number in range(RETRIES):
            reply = attempt(api, "DELETE", path)
            status = reply.status if reply else "no-answer"
            outcomes.note("delete", status)
            if reply is not None and reply.status == 404:
                _judge_404(outcomes, account, resource_id, others, earlier_attempts=attempt_number)
            if reply is not None and (reply.status == 204 or (reply.status == 404 and attempt_number > 0)):
                with outcomes.lock:
                    outcomes.acknowledged[account.name].discard(resource_id)
                    outcomes.deleted.setdefault(account.name, set()).add(resource_id)
                return
            if reply is not None and reply.status < 500:
                return  # 404 on the first try: another client deleted it first
            with outcomes.lock:
                outcomes.retries += 1
            time.sleep(0.02 * (attempt_number + 1))
        with outcomes.lock:  # gave up: it may or may not be deleted
            outcomes.acknowledged[account.name].discard(resource_id)
            outcomes.unresolved.setdefault(account.name, set()).add(resource_id)
    finally:
        with outcomes.lock:
            outcomes.deleting[resource_id] -= 1


def _judge_404(
    outcomes: ClientOutcomes, account: Account, resource_id: str, others: bool, earlier_attempts: int
) -> None:
    """A 404 is legitimate when the resource was not live: another client deleted it (or was
    deleting it), or an earlier attempt of this delete (answered 5xx or not at all) landed."""
    with outcomes.lock:
        deleted_by_someone = resource_id in outcomes.deleted.get(account.name, set())
        racing = others or outcomes.deleting[resource_id] > 1
        if not (earlier_attempts or racing or deleted_by_someone):
            outcomes.wrong_404s.append(f"{account.name}/{resource_id}")
