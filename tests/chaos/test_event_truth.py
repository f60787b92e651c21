"""The chaos run's truth from the table's stream (chaos/usage_events.py `replay`): what a limit change
allows a quota to hold, read from stream records shaped as DynamoDB Streams writes them."""

from __future__ import annotations

from typing import Any

from chaos.usage_events import replay
from functions.adapters import keys
from functions.adapters.attributes import to_attributes
from functions.core.model import Quota

ACME = Quota("acme")


def record(
    event: str, pk: str, sk: str, new: dict[str, Any] | None, old: dict[str, Any] | None = None
) -> dict[str, Any]:
    data: dict[str, Any] = {"Keys": to_attributes({"pk": pk, "sk": sk})}
    if new is not None:
        data["NewImage"] = to_attributes({"pk": pk, "sk": sk, **new})
    if old is not None:
        data["OldImage"] = to_attributes({"pk": pk, "sk": sk, **old})
    return {"eventName": event, "dynamodb": data}


def account(limit: int, admitted: int, version: int) -> dict[str, Any]:
    return {"limit": limit, "admitted": admitted, "room": limit - admitted, "limit_version": version}


def test_a_limit_lowered_below_a_spread_usage_allows_the_usage_of_every_admission_shard() -> None:
    """Found by a chaos run under partition limits: a lowering folds shard 1's room into shard 0 but
    shard 1 keeps its admitted, so the account item alone (3) understated the usage (5)."""
    pk, shard_pk = keys.account_pk(ACME), keys.shard_pk(ACME, 1)
    shard = {"limit": 0, "admitted": 2, "room": 18, "shard": 1}
    records = [
        record("INSERT", pk, keys.ACCOUNT_SORT_KEY, account(40, 0, 1)),
        record("INSERT", shard_pk, keys.SHARD_SORT_KEY, shard),
        record("MODIFY", pk, keys.ACCOUNT_SORT_KEY, account(40, 3, 1), account(40, 0, 1)),
        record("MODIFY", shard_pk, keys.SHARD_SORT_KEY, {**shard, "room": 0, "retired": True}, shard),
        record("MODIFY", pk, keys.ACCOUNT_SORT_KEY, account(3, 3, 2), account(40, 3, 1)),
    ]
    truth = replay(records, [ACME])
    assert truth.changes == {ACME: [(2, 40, 3)]}
    assert truth.ceiling(ACME, 2, 3) == 5
    assert truth.ceiling(ACME, 1, 40) == 40


def test_a_change_that_keeps_the_limit_keeps_what_the_last_lowering_allowed() -> None:
    pk = keys.account_pk(ACME)
    records = [
        record("INSERT", pk, keys.ACCOUNT_SORT_KEY, account(10, 0, 1)),
        record("MODIFY", pk, keys.ACCOUNT_SORT_KEY, account(10, 7, 1), account(10, 0, 1)),
        record("MODIFY", pk, keys.ACCOUNT_SORT_KEY, account(4, 7, 2), account(10, 7, 1)),  # lowered below 7
        record("MODIFY", pk, keys.ACCOUNT_SORT_KEY, account(4, 6, 3), account(4, 7, 2)),  # its thresholds, say
        record("MODIFY", pk, keys.ACCOUNT_SORT_KEY, account(4, 5, 3), account(4, 6, 3)),  # a delete
    ]
    truth = replay(records, [ACME])
    assert truth.changes == {ACME: [(2, 10, 4)]}
    assert (truth.ceiling(ACME, 2, 4), truth.ceiling(ACME, 3, 4)) == (7, 7)
