"""The API's flows: admission, create, delete, reads. Pure orchestration over the `ApiStore` port.

Three numbers live on the account item and move in a fixed order around each resource's life:

* `best_effort` (lower bound): +1 only after the resource exists, -1 before it stops being live.
  Its increment is never retried after an ambiguous failure, so it can be lost but never doubled.
* `admitted` (upper bound): +1 before the resource exists, conditional on `admitted < limit`,
  -1 only after it stopped being live. That single conditional update is the admission check,
  so concurrent creates cannot run past the limit, and no transaction runs on the API path.
* `limit`.

Crashes and ambiguous failures can only make `best_effort` too low or `admitted` too high:
the first undercounts, the second holds a slot until healed (functions/core/healing.py).
docs/admission.md has the argument and the failure cases.

Every account write also bumps `version` and stamps `last_write_at`, so a heal can tell that no
API write came between its reads and its write. A create's increment is conditional on the
account's `heal_epoch` being the one its reservation saw: a heal in between has already counted
(or will never count) the resource, so the increment is skipped. A delete first marks the
resource `deleting_at`, so a heal sees the delete in flight and waits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from functions.core.errors import (
    AccountNotFound,
    IdempotencyKeyMismatch,
    IdempotencyKeyReused,
    LimitExceeded,
    ResourceAlreadyExists,
    ResourceNotFound,
    StoreUnavailable,
)
from functions.core.model import (
    NewResource,
    Page,
    Resource,
    Usage,
    idempotent_resource_id,
    random_resource_id,
)

logger = logging.getLogger(__name__)


class ApiStore(Protocol):
    """What the API flows need from storage. Every method is one DynamoDB call."""

    def put_account(self, account_id: str, limit: int, now: str) -> None: ...

    def read_usage(self, account_id: str) -> Usage | None: ...

    def reserve_slot(self, account_id: str, now: str) -> int | None:
        """Increment `admitted` if it is below the limit and return the account's heal epoch;
        None at the limit. Raises AccountNotFound when the account does not exist."""
        ...

    def release_slot(self, account_id: str, now: str) -> None:
        """Decrement `admitted`. Never retried after an ambiguous failure."""
        ...

    def increment_best_effort(self, account_id: str, heal_epoch: int, now: str) -> bool:
        """+1 unless a heal happened since `heal_epoch` (then False). Never retried after an
        ambiguous failure: a lost increment undercounts, a doubled one would overcount."""
        ...

    def decrement_best_effort(self, account_id: str, now: str) -> None: ...

    def put_resource(self, resource: Resource) -> None:
        """Conditional create. Raises ResourceAlreadyExists(existing) for another request's item;
        an SDK retry that finds this request's own landed item succeeds."""
        ...

    def get_resource(self, account_id: str, resource_id: str) -> Resource | None: ...

    def mark_deleting(self, account_id: str, resource_id: str, now: str) -> bool:
        """Stamp `deleting_at` on a live resource; False if it is missing or already deleted."""
        ...

    def soft_delete(self, account_id: str, resource_id: str, now: str, token: str) -> bool:
        """Set deleted=true if the resource exists and is not deleted; False otherwise.

        `token` identifies this request, so an SDK retry of a landed write still returns True."""
        ...

    def list_resources(self, account_id: str, limit: int, cursor: str | None) -> Page: ...


@dataclass(frozen=True)
class Created:
    resource: Resource
    replayed: bool  # True when an Idempotency-Key retry returned the earlier resource


Clock = Callable[[], str]
TokenSource = Callable[[], str]


def put_account(store: ApiStore, account_id: str, limit: int, clock: Clock) -> Usage:
    store.put_account(account_id, limit, clock())
    return get_usage(store, account_id)


def get_usage(store: ApiStore, account_id: str) -> Usage:
    usage = store.read_usage(account_id)
    if usage is None:
        raise AccountNotFound(account_id)
    return usage


def create_resource(
    store: ApiStore,
    account_id: str,
    request: NewResource,
    idempotency_key: str | None,
    clock: Clock,
    token: TokenSource = random_resource_id,
) -> Created:
    fingerprint = request.fingerprint()
    if idempotency_key is None:
        resource_id = random_resource_id()
    else:
        resource_id = idempotent_resource_id(account_id, idempotency_key)
        earlier = store.get_resource(account_id, resource_id)
        if earlier is not None:
            # A replay answers as the first call did, even if the account is now at its limit.
            return _replay(earlier, fingerprint)

    usage = get_usage(store, account_id)
    if usage.used >= usage.limit:
        raise LimitExceeded(account_id, usage.limit)
    now = clock()
    heal_epoch = store.reserve_slot(account_id, now)
    if heal_epoch is None:
        raise LimitExceeded(account_id, usage.limit)

    resource = Resource(
        account_id=account_id,
        resource_id=resource_id,
        name=request.name,
        attributes=request.attributes,
        created_at=now,
        request_fingerprint=fingerprint,
        request_token=token(),
    )
    try:
        store.put_resource(resource)
    except StoreUnavailable as failure:
        if not failure.may_have_landed:
            store.release_slot(account_id, now)  # the resource certainly does not exist: free its slot
        raise
    except ResourceAlreadyExists as exists:
        # Our write did not land (a concurrent request with the same key won): free our slot.
        store.release_slot(account_id, now)
        if not isinstance(exists.existing, Resource):
            raise
        return _replay(exists.existing, fingerprint)

    try:
        if not store.increment_best_effort(account_id, heal_epoch, now):
            logger.info("account %s was healed since the reservation; its count already holds", account_id)
    except StoreUnavailable:
        # The resource exists and the stream will count it; a missed increment only undercounts.
        logger.warning("best-effort increment failed; resource %s stays undercounted", resource_id)
    return Created(resource=resource, replayed=False)


def _replay(earlier: Resource, fingerprint: str) -> Created:
    if earlier.request_fingerprint != fingerprint:
        raise IdempotencyKeyMismatch()
    if earlier.deleted:
        raise IdempotencyKeyReused(earlier.resource_id)
    return Created(resource=earlier, replayed=True)


def get_resource(store: ApiStore, account_id: str, resource_id: str) -> Resource:
    resource = store.get_resource(account_id, resource_id)
    if resource is None or resource.deleted:
        raise ResourceNotFound(account_id, resource_id)
    return resource


def list_resources(store: ApiStore, account_id: str, limit: int, cursor: str | None) -> Page:
    get_usage(store, account_id)  # 404 for an unknown account rather than an empty list
    return store.list_resources(account_id, limit, cursor)


def delete_resource(
    store: ApiStore,
    account_id: str,
    resource_id: str,
    clock: Clock,
    token: TokenSource = random_resource_id,
) -> None:
    now = clock()
    # The marker tells a heal that a delete is in flight (between its decrement and soft delete).
    if not store.mark_deleting(account_id, resource_id, now):
        raise ResourceNotFound(account_id, resource_id)
    # Decrement while the resource is still live, so best_effort never exceeds the live count.
    store.decrement_best_effort(account_id, now)
    if not store.soft_delete(account_id, resource_id, now, token()):
        # A concurrent delete won; our decrement made best_effort undercount by one, which is safe.
        raise ResourceNotFound(account_id, resource_id)
    try:
        # Only the request whose soft delete landed frees the slot, and only after the resource
        # stopped being live, so `admitted` never drops below the live count.
        store.release_slot(account_id, now)
    except StoreUnavailable:
        logger.warning("slot release failed for %s/%s; the slot stays held", account_id, resource_id)
