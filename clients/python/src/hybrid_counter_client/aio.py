"""`AsyncLimitsClient`: the same calls as `LimitsClient`, for asyncio code.

Each attempt (reading the credentials, which may call STS, signing and the HTTP exchange) runs in
asyncio's default thread pool (`asyncio.to_thread`), over the same botocore transport: no
dependency beyond the sync client's, at the cost of a thread per attempt in flight (the pool has
min(32, CPUs + 4) of them). The waits between attempts are `await`ed, never slept in a thread.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from hybrid_counter_client import operations
from hybrid_counter_client.client import DEFAULT_TIMEOUT_SECONDS, ClientBase, R, resize_key
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
from hybrid_counter_client.transport import Session

T = TypeVar("T")


class AsyncLimitsClient(ClientBase):
    """`LimitsClient`'s methods as coroutines (`list_resources` an async iterator); the same
    signing, retries and errors. `sleep` is awaited between attempts."""

    def __init__(
        self,
        api_url: str,
        session: Session | None = None,
        *,
        region: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
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
    ) -> AsyncLimitsClient:
        """`LimitsClient.local`'s twin: the system `make run` serves, as a tenant or the admin."""
        system = local_system(account_id, admin, directory)
        return cls(system.api_url, system.session, region=system.region, timeout=timeout, retry=retry)

    async def _call(self, call: Call[T], attempts: Attempts | None = None) -> T:
        attempts = attempts or self._attempts(call)
        while True:
            try:
                return await asyncio.to_thread(self._transport.call, call)
            except HybridCounterError as error:
                if call.when_gone is not None and attempts.gone_after_landing(error):
                    return call.when_gone()
                wait = attempts.after(error)
                if wait is None:
                    raise
                await self._sleep(wait)

    async def put_account(
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
        return await self._call(
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

    async def get_account(self, account_id: str) -> Account:
        return await self._call(operations.get_account(account_id))

    async def create_resource(
        self,
        account_id: str,
        name: str,
        *,
        attributes: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        amount: int | None = None,
    ) -> Resource:
        return await self._call(operations.create_resource(account_id, name, attributes, idempotency_key, amount))

    async def get_resource(self, account_id: str, resource_id: str) -> Resource:
        return await self._call(operations.get_resource(account_id, resource_id))

    async def _resize(self, read: Call[R], send: Callable[[str | None], Call[R]], if_match: str | None) -> R:
        """`LimitsClient._resize`, awaited."""
        reads = 0
        while True:
            if if_match is None:
                reads += 1
                call = send((await self._call(read)).etag)
            else:
                call = send(if_match)
            attempts = self._attempts(call)
            try:
                return await self._call(call, attempts)
            except PreconditionFailed as error:
                if if_match is not None or not resize_again(error, attempts, reads):
                    raise

    async def resize_resource(
        self,
        account_id: str,
        resource_id: str,
        amount: int,
        *,
        if_match: str | None = None,
        idempotency_key: str | None = None,
    ) -> Resource:
        key = resize_key(idempotency_key)
        return await self._resize(
            operations.get_resource(account_id, resource_id),
            lambda version: operations.resize_resource(account_id, resource_id, amount, version, key),
            if_match,
        )

    async def delete_resource(self, account_id: str, resource_id: str) -> None:
        await self._call(operations.delete_resource(account_id, resource_id))

    async def list_resources_page(
        self, account_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> ResourcePage:
        return await self._call(operations.list_resources_page(account_id, limit, cursor))

    async def list_resources(self, account_id: str, *, page_size: int | None = None) -> AsyncIterator[Resource]:
        cursor: str | None = None
        while True:
            page = await self.list_resources_page(account_id, limit=page_size, cursor=cursor)
            for resource in page.items:
                yield resource
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def put_type_limit(
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
        return await self._call(
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

    async def would_admit(self, account_id: str, amount: int | None = None) -> Admission:
        """Whether a create of `amount` units (1 when not given) would be admitted now, reserving
        nothing (advisory: a create a moment later may find fewer units free, or more)."""
        return await self._call(operations.would_admit(account_id, amount))

    async def would_admit_typed(self, account_id: str, resource_type: str, amount: int | None = None) -> Admission:
        """As `would_admit`, for one of the account's types."""
        return await self._call(operations.would_admit_typed(account_id, resource_type, amount))

    async def period_history(self, account_id: str, periods: int | None = None) -> PeriodHistory:
        """A periodic quota's exact totals: its current period and the `periods - 1` before it (1 to
        13; the API's default, 2, when not given), newest first, each `settled` once final.
        QuotaNotPeriodic for a holding quota."""
        return await self._call(operations.period_history(account_id, periods))

    async def typed_period_history(
        self, account_id: str, resource_type: str, periods: int | None = None
    ) -> PeriodHistory:
        """As `period_history`, for one of the account's types."""
        return await self._call(operations.typed_period_history(account_id, resource_type, periods))

    async def get_type(self, account_id: str, resource_type: str) -> ResourceType:
        return await self._call(operations.get_type(account_id, resource_type))

    async def list_types(self, account_id: str) -> TypeList:
        return await self._call(operations.list_types(account_id))

    async def create_typed_resource(
        self,
        account_id: str,
        resource_type: str,
        name: str,
        *,
        attributes: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        amount: int | None = None,
    ) -> TypedResource:
        return await self._call(
            operations.create_typed_resource(account_id, resource_type, name, attributes, idempotency_key, amount)
        )

    async def get_typed_resource(self, account_id: str, resource_type: str, resource_id: str) -> TypedResource:
        return await self._call(operations.get_typed_resource(account_id, resource_type, resource_id))

    async def resize_typed_resource(
        self,
        account_id: str,
        resource_type: str,
        resource_id: str,
        amount: int,
        *,
        if_match: str | None = None,
        idempotency_key: str | None = None,
    ) -> TypedResource:
        key = resize_key(idempotency_key)
        return await self._resize(
            operations.get_typed_resource(account_id, resource_type, resource_id),
            lambda version: operations.resize_typed_resource(
                account_id, resource_type, resource_id, amount, version, key
            ),
            if_match,
        )

    async def delete_account(self, account_id: str) -> AccountDeletion:
        """As the blocking client's `delete_account`."""
        return await self._call(operations.delete_account(account_id))

    async def delete_type(
        self, account_id: str, resource_type: str, delete_resources: bool | None = None
    ) -> TypeDeletion:
        """As the blocking client's `delete_type`."""
        return await self._call(operations.delete_type(account_id, resource_type, delete_resources))

    async def delete_typed_resource(self, account_id: str, resource_type: str, resource_id: str) -> None:
        await self._call(operations.delete_typed_resource(account_id, resource_type, resource_id))

    async def list_typed_resources_page(
        self, account_id: str, resource_type: str, *, limit: int | None = None, cursor: str | None = None
    ) -> TypedResourcePage:
        return await self._call(operations.list_typed_resources_page(account_id, resource_type, limit, cursor))

    async def list_typed_resources(
        self, account_id: str, resource_type: str, *, page_size: int | None = None
    ) -> AsyncIterator[TypedResource]:
        cursor: str | None = None
        while True:
            page = await self.list_typed_resources_page(account_id, resource_type, limit=page_size, cursor=cursor)
            for resource in page.items:
                yield resource
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # -- plans (docs/plans.md), as LimitsClient's ------------------------------------------------

    async def remove_override(self, account_id: str, resource_type: str) -> ResourceType:
        return await self._call(operations.remove_override(account_id, resource_type))

    async def put_plan(self, plan_id: str, *, quotas: Mapping[str, Any], if_match: str | None = None) -> Plan:
        return await self._call(operations.put_plan(plan_id, quotas, if_match))

    async def get_plan(self, plan_id: str) -> Plan:
        return await self._call(operations.get_plan(plan_id))

    async def list_plans_page(self, *, limit: int | None = None, cursor: str | None = None) -> PlanPage:
        return await self._call(operations.list_plans_page(limit, cursor))

    async def list_plans(self, *, page_size: int | None = None) -> AsyncIterator[Plan]:
        cursor: str | None = None
        while True:
            page = await self.list_plans_page(limit=page_size, cursor=cursor)
            for plan in page.items:
                yield plan
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def list_accounts_page(
        self, *, plan: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> AccountPage:
        return await self._call(operations.list_accounts_page(plan, limit, cursor))

    async def list_accounts(
        self, *, plan: str | None = None, page_size: int | None = None
    ) -> AsyncIterator[AccountEntry]:
        cursor: str | None = None
        while True:
            page = await self.list_accounts_page(plan=plan, limit=page_size, cursor=cursor)
            for entry in page.items:
                yield entry
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def close(self) -> None:
        self._transport.close()

    async def __aenter__(self) -> AsyncLimitsClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
