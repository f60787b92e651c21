"""`LimitsClient`: every operation of the API as a typed method, signed, retried as the API says."""

from __future__ import annotations

import os
import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import boto3

from hybrid_counter_client import operations
from hybrid_counter_client.errors import HybridCounterError, PreconditionFailed
from hybrid_counter_client.local_run import local_system
from hybrid_counter_client.models import (
    Account,
    AccountDeletion,
    AccountEntry,
    AccountPage,
    Admission,
    PeriodHistory,
    Plan,
    PlanPage,
    RateLimit,
    Resource,
    ResourcePage,
    ResourceType,
    TypeDeletion,
    TypedResource,
    TypedResourcePage,
    TypeList,
)
from hybrid_counter_client.operations import Call
from hybrid_counter_client.retries import Attempts, RetryPolicy, resize_again
from hybrid_counter_client.transport import Session, Transport

T = TypeVar("T")
# A resize's result: the resource, of the default type or of another.
R = TypeVar("R", Resource, TypedResource)

# An attempt's connect and read timeout. The API function's own timeout is 10 s, past which API
# Gateway answers 503 at once; 15 s leaves it the room to say so.
DEFAULT_TIMEOUT_SECONDS = 15.0


class ClientBase:
    """What the sync and the async client share: the transport, the retry policy and the clock.

    `api_url`: the stack's `ApiUrl` output (`https://ID.execute-api.REGION.amazonaws.com/prod/`).
    `session`: whose credentials sign every request (default `boto3.Session()`, the environment's),
    read again for each request so that an assumed role's refreshed credentials are used; the
    region is the session's unless `region` is given. `timeout`: an attempt's connect and read
    timeout. `retry`: attempts, deadline and backoff (retries.py). `clock` (monotonic seconds),
    `sleep` and `random` (in [0, 1)) time the waits between attempts; tests pass their own.
    """

    def __init__(
        self,
        api_url: str,
        session: Session | None,
        region: str | None,
        timeout: float,
        retry: RetryPolicy | None,
        clock: Callable[[], float],
        random: Callable[[], float],
    ) -> None:
        self._transport = Transport(api_url, session if session is not None else boto3.Session(), region, timeout)
        self._retry = retry or RetryPolicy()
        self._clock = clock
        self._random = random

    @property
    def region(self) -> str:
        return self._transport.region

    def _attempts(self, call: Call[Any]) -> Attempts:
        return Attempts(call, self._retry, self._clock, self._random)


def resize_key(idempotency_key: str | None) -> str:
    """A resize's Idempotency-Key: the caller's, or a new uuid4, made once per call so that every
    attempt, and every send after a new read, carries it."""
    return idempotency_key or str(uuid.uuid4())


class LimitsClient(ClientBase):
    """The hybrid counter's API, as an admin or a tenant session calls it (docs/security.md).

    A call is retried when its answer says to (a 429, a 5xx, no answer), after `Retry-After` and a
    jittered backoff, within the retry policy's attempts and deadline; any other error is raised at
    once, as an exception named after its code (`hybrid_counter_client.errors`).
    """

    def __init__(
        self,
        api_url: str,
        session: Session | None = None,
        *,
        region: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = random.random,
    ) -> None:
        super().__init__(api_url, session, region, timeout, retry, clock, random)
        self._sleep = sleep

    @classmethod
    def local(
        cls,
        account_id: str | None = None,
        *,
        admin: bool = False,
        directory: str | os.PathLike[str] | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retry: RetryPolicy | None = None,
    ) -> LimitsClient:
        """A client of the system `make run` serves in this checkout, signed as `account_id`'s tenant
        (`LimitsClient.local("acme")`) or as the admin (`LimitsClient.local(admin=True)`), with the
        keys `make run` keeps in `.local/identities.json`. `directory`: the `.local` folder (default:
        HYBRID_COUNTER_LOCAL_DIR, else the first `.local` holding endpoints.json in the current
        folder or one above it, so it works from any folder of the repository). LocalSystemError
        when `make run` has not written its endpoints (or holds no session for `account_id`:
        `python -m local.identities ACCOUNT` makes one). `timeout` and `retry` as for the
        constructor."""
        system = local_system(account_id, admin, directory)
        return cls(system.api_url, system.session, region=system.region, timeout=timeout, retry=retry)

    def _call(self, call: Call[T], attempts: Attempts | None = None) -> T:
        attempts = attempts or self._attempts(call)
        while True:
            try:
                return self._transport.call(call)
            except HybridCounterError as error:
                if call.when_gone is not None and attempts.gone_after_landing(error):
                    return call.when_gone()
                wait = attempts.after(error)
                if wait is None:
                    raise
                self._sleep(wait)

    def put_account(
        self,
        account_id: str,
        *,
        limit: int | None = None,
        rate_limit: RateLimit | None = None,
        thresholds: list[int] | None = None,
        if_match: str | None = None,
        idempotency_key: str | None = None,
        period: str | None = None,
        anchor: str | None = None,
        plan: str | None = None,
        mode: str | None = None,
    ) -> Account:
        """Create the account or set its limit (an admin session only). `rate_limit`: its own rate
        limit; `thresholds`: its own usage thresholds, 1 to 10 percentages 1..100 (docs/events.md;
        `[80, 100]` gives the defaults back); each omitted, it keeps what it has. `period`: "day"
        or "month" makes the quota periodic (docs/periods.md): its usage is what was created since
        its current period began, from 0 again at each period's end; `anchor` (RFC 3339, whole
        seconds, only with `period`) moves its boundaries off 00:00 UTC and the 1st. Omitted, the
        quota keeps its period (or stays a holding); PeriodChangeRefused when the quota cannot take
        the one asked for. `if_match`: change it only if its `etag` is still this one
        (PreconditionFailed otherwise). Every attempt sends the same `idempotency_key` (a new uuid4
        unless given), so a retry never overwrites a PUT made after its first attempt: it then
        answers the account as that PUT left it.

        `plan` (alone: with no `limit` or other setting, else ValidationError) puts the account on
        that plan (docs/plans.md): each of its quotas on the account's type of that name, but the
        account's overrides; the answer lists every type. PlanNotFound, nothing written, for a plan
        that does not exist. A retry gives nothing twice.

        `mode`: "shadow" admits creates past the limit and announces the refusals enforcement would
        have made (docs/plans.md, "Shadow mode"); "enforce" refuses them (LimitExceeded, as every
        quota before shadow mode). Omitted, the quota keeps its mode.
        ValidationError for a periodic quota in shadow mode."""
        return self._call(
            operations.put_account(
                account_id,
                limit,
                rate_limit,
                thresholds,
                if_match,
                idempotency_key,
                period=period,
                anchor=anchor,
                plan=plan,
                mode=mode,
            )
        )

    def get_account(self, account_id: str) -> Account:
        return self._call(operations.get_account(account_id))

    def create_resource(
        self,
        account_id: str,
        name: str,
        *,
        attributes: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        amount: int | None = None,
    ) -> Resource:
        """Take `amount` units of the account's limit (default 1 when None; LimitExceeded when fewer are
        free). Every attempt of the call sends the same `idempotency_key` (a new uuid4 unless
        given), so a retry never makes a second resource; pass your own to make a retry of your own
        safe too."""
        return self._call(operations.create_resource(account_id, name, attributes, idempotency_key, amount))

    def get_resource(self, account_id: str, resource_id: str) -> Resource:
        return self._call(operations.get_resource(account_id, resource_id))

    def _resize(self, read: Call[R], send: Callable[[str | None], Call[R]], if_match: str | None) -> R:
        """`send(if_match)` with the caller's `if_match`; without one, with the version `read` finds,
        read again and sent again while `resize_again` says so (retries.py)."""
        reads = 0
        while True:
            if if_match is None:
                reads += 1
                call = send(self._call(read).etag)
            else:
                call = send(if_match)
            attempts = self._attempts(call)
            try:
                return self._call(call, attempts)
            except PreconditionFailed as error:
                if if_match is not None or not resize_again(error, attempts, reads):
                    raise

    def resize_resource(
        self,
        account_id: str,
        resource_id: str,
        amount: int,
        *,
        if_match: str | None = None,
        idempotency_key: str | None = None,
    ) -> Resource:
        """Set the units the resource holds to `amount` (1 to 2**53 - 1), and answer it with its new
        `etag`. A growth is admitted as a create of the difference (LimitExceeded when fewer units
        are free: the resource keeps its amount); a shrink frees the difference at once.

        `if_match`: resize only if its `etag` is still this one (PreconditionFailed otherwise).
        Without it, the client reads the resource first and sends the version it read, reading
        again and sending again (a few times) when another resize landed between its read and its
        first attempt. Every attempt sends the same `idempotency_key` (a new uuid4 unless given)
        and the same If-Match, so a retry after this resize landed answers the resource as it is,
        and a retry after another caller's resize is PreconditionFailed: never applied twice, never
        over the other. The same key with another amount is IdempotencyKeyMismatch."""
        key = resize_key(idempotency_key)
        return self._resize(
            operations.get_resource(account_id, resource_id),
            lambda version: operations.resize_resource(account_id, resource_id, amount, version, key),
            if_match,
        )

    def delete_resource(self, account_id: str, resource_id: str) -> None:
        """Delete it and free its units. ResourceNotFound if there is no such live resource, but not
        when an earlier attempt of this call may have deleted it."""
        self._call(operations.delete_resource(account_id, resource_id))

    def list_resources_page(
        self, account_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> ResourcePage:
        """One page of up to `limit` resources (the API's default 25, at most 100), from `cursor`
        (a page's `next_cursor`; the first page without one)."""
        return self._call(operations.list_resources_page(account_id, limit, cursor))

    def list_resources(self, account_id: str, *, page_size: int | None = None) -> Iterator[Resource]:
        """Every live resource of the account, page after page, each exactly once."""
        cursor: str | None = None
        while True:
            page = self.list_resources_page(account_id, limit=page_size, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # -- resource types (docs/api.md, "Resource types"): the calls above are the default type's --------

    def put_type_limit(
        self,
        account_id: str,
        resource_type: str,
        *,
        limit: int,
        thresholds: list[int] | None = None,
        if_match: str | None = None,
        idempotency_key: str | None = None,
        period: str | None = None,
        anchor: str | None = None,
        expires_at: str | None = None,
        mode: str | None = None,
    ) -> ResourceType:
        """Set a type's limit (an admin session only), adding the type to the account (and the
        account, at a default-type limit of 0, if it has none yet; TooManyResourceTypes past the
        most types an account may have). `thresholds`, `period` and `anchor`: the type's own, as in
        `put_account` (omitted, it keeps what it has). `if_match`: change it only if the type's
        `etag` is still this one (PreconditionFailed otherwise). `idempotency_key`: as in
        `put_account`. `expires_at` (RFC 3339, UTC, whole seconds, e.g. "2026-12-31T00:00:00Z"): an
        expiring grant on a type the account's plan gives, which returns to the plan's limit then
        (docs/plans.md, "Expiring grants"); ValidationError for a type without a plan behind it, a
        periodic one, a time not in the future or more than 366 days ahead. `mode`: "enforce" or
        "shadow", as in `put_account` (on a type the plan gives, an override of the plan's mode)."""
        return self._call(
            operations.put_type_limit(
                account_id,
                resource_type,
                limit,
                thresholds,
                if_match,
                idempotency_key,
                period=period,
                anchor=anchor,
                expires_at=expires_at,
                mode=mode,
            )
        )

    def would_admit(self, account_id: str, amount: int | None = None) -> Admission:
        """Whether a create of `amount` units (1 when not given) would be admitted now, reserving
        nothing (advisory: a create a moment later may find fewer units free, or more)."""
        return self._call(operations.would_admit(account_id, amount))

    def would_admit_typed(self, account_id: str, resource_type: str, amount: int | None = None) -> Admission:
        """As `would_admit`, for one of the account's types."""
        return self._call(operations.would_admit_typed(account_id, resource_type, amount))

    def period_history(self, account_id: str, periods: int | None = None) -> PeriodHistory:
        """A periodic quota's exact totals: its current period and the `periods - 1` before it (1 to
        13; the API's default, 2, when not given), newest first, each `settled` once final.
        QuotaNotPeriodic for a holding quota."""
        return self._call(operations.period_history(account_id, periods))

    def typed_period_history(self, account_id: str, resource_type: str, periods: int | None = None) -> PeriodHistory:
        """As `period_history`, for one of the account's types."""
        return self._call(operations.typed_period_history(account_id, resource_type, periods))

    def get_type(self, account_id: str, resource_type: str) -> ResourceType:
        """A type's limit and counts (AccountNotFound when the account has no limit of that type)."""
        return self._call(operations.get_type(account_id, resource_type))

    def list_types(self, account_id: str) -> TypeList:
        """Every type of the account, the default type first, then by name."""
        return self._call(operations.list_types(account_id))

    def create_typed_resource(
        self,
        account_id: str,
        resource_type: str,
        name: str,
        *,
        attributes: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        amount: int | None = None,
    ) -> TypedResource:
        """Take `amount` units of the type's limit, as `create_resource` does of the account's. The same
        `idempotency_key` on two types is two requests."""
        return self._call(
            operations.create_typed_resource(account_id, resource_type, name, attributes, idempotency_key, amount)
        )

    def get_typed_resource(self, account_id: str, resource_type: str, resource_id: str) -> TypedResource:
        return self._call(operations.get_typed_resource(account_id, resource_type, resource_id))

    def resize_typed_resource(
        self,
        account_id: str,
        resource_type: str,
        resource_id: str,
        amount: int,
        *,
        if_match: str | None = None,
        idempotency_key: str | None = None,
    ) -> TypedResource:
        """Set the units of the type's limit it holds, as `resize_resource` does."""
        key = resize_key(idempotency_key)
        return self._resize(
            operations.get_typed_resource(account_id, resource_type, resource_id),
            lambda version: operations.resize_typed_resource(
                account_id, resource_type, resource_id, amount, version, key
            ),
            if_match,
        )

    def delete_typed_resource(self, account_id: str, resource_type: str, resource_id: str) -> None:
        """Delete it and free its type's slot, as `delete_resource` does."""
        self._call(operations.delete_typed_resource(account_id, resource_type, resource_id))

    def list_typed_resources_page(
        self, account_id: str, resource_type: str, *, limit: int | None = None, cursor: str | None = None
    ) -> TypedResourcePage:
        return self._call(operations.list_typed_resources_page(account_id, resource_type, limit, cursor))

    def list_typed_resources(
        self, account_id: str, resource_type: str, *, page_size: int | None = None
    ) -> Iterator[TypedResource]:
        """Every live resource of the type, page after page, each exactly once."""
        cursor: str | None = None
        while True:
            page = self.list_typed_resources_page(account_id, resource_type, limit=page_size, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # -- plans (docs/plans.md): admin sessions only --------------------------------------------

    def delete_account(self, account_id: str) -> AccountDeletion:
        """Delete the account (admin only): every create of it is refused from now on (404
        AccountNotFound, a replay of an Idempotency-Key too), an Account Deleted event is announced
        once, and every quota, resource, record and event of it is erased within the documented
        bound (docs/plans.md, "Lifecycle"). A repeat answers the same deletion; AccountNotFound if
        there is no such account (after a retry of a call that may have landed: one that was
        erased already)."""
        return self._call(operations.delete_account(account_id))

    def delete_type(self, account_id: str, resource_type: str, delete_resources: bool | None = None) -> TypeDeletion:
        """Delete the type (admin only): `removed` when it is gone. With `delete_resources=True`,
        its resources are deleted first, each as `delete_typed_resource` does (a periodic type's:
        its current period's records; its closed periods' records go with it, as its history);
        `removed` False then says the stream has yet to count those deletes (every create of the
        type is refused meanwhile): call again to remove it, within the stream's lag. TypeNotEmpty
        when it holds resources (records) and `delete_resources` is not True; PlanType for a type
        the account's plan gives; DefaultTypeNotDeletable for the default type; AccountNotFound for
        a type the account does not have (after a retry of a call that may have landed: that call
        removed it)."""
        return self._call(operations.delete_type(account_id, resource_type, delete_resources))

    def remove_override(self, account_id: str, resource_type: str) -> ResourceType:
        """Give the type its account's plan's limit again (its override removed). OverrideNotFound
        when its limit is no override (after a retry of a call that may have landed: that call
        removed it)."""
        return self._call(operations.remove_override(account_id, resource_type))

    def put_plan(self, plan_id: str, *, quotas: Mapping[str, Any], if_match: str | None = None) -> Plan:
        """Create the plan or replace its quotas: by type name, each as `put_type_limit` takes it
        (`{"limit": 50, "thresholds": [80], "period": "month"}`). The same quotas again change
        nothing; `if_match`: only if its `etag` is still this one (PreconditionFailed otherwise)."""
        return self._call(operations.put_plan(plan_id, quotas, if_match))

    def get_plan(self, plan_id: str) -> Plan:
        """The plan (PlanNotFound if there is none of that name)."""
        return self._call(operations.get_plan(plan_id))

    def list_plans_page(self, *, limit: int | None = None, cursor: str | None = None) -> PlanPage:
        return self._call(operations.list_plans_page(limit, cursor))

    def list_plans(self, *, page_size: int | None = None) -> Iterator[Plan]:
        """Every plan, by name, page after page."""
        cursor: str | None = None
        while True:
            page = self.list_plans_page(limit=page_size, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def list_accounts_page(
        self, *, plan: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> AccountPage:
        return self._call(operations.list_accounts_page(plan, limit, cursor))

    def list_accounts(self, *, plan: str | None = None, page_size: int | None = None) -> Iterator[AccountEntry]:
        """Every account (or `plan`'s), page after page: on no plan first, then each plan's by plan name."""
        cursor: str | None = None
        while True:
            page = self.list_accounts_page(plan=plan, limit=page_size, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> LimitsClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
