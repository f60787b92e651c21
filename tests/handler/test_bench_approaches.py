"""`make bench`'s harness and approaches (benchmarks/bench.py, benchmarks/approaches/) on small runs.

The figures the bench prints are measured, not asserted; these tests check what would make them
wrong: hand-counted capacity, the exact approaches staying exact under lost answers, the ones the
blog calls approximate drifting, and the conflict model answering as DynamoDB documents.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from benchmarks.approaches import APPROACHES
from benchmarks.approaches.base import SDK_CONFIG
from benchmarks.approaches.this_project import ThisProject
from benchmarks.bench import Wire, measure_failures, run_approach
from functions.adapters.api_store import DynamoApiStore
from functions.adapters.dynamo_table import DynamoTable
from functions.core.accounts import get_account
from functions.core.model import Quota
from tests.conftest import Backend
from tests.handler.conftest import dynamodb_url_of

pytestmark = pytest.mark.shares_setup  # the benchmark results its module fixture measures

EXACT = ("transaction-marker", "item-collection", "set", "paper", "this-project")
SMALL = argparse.Namespace(iterations=2, standing=2, workers=1, resources=4, fault_every=3)


@pytest.fixture(scope="module")
def results(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    """Every approach, once, on a small run: one caller, every third write losing its answer."""
    endpoint_url = dynamodb_url_of(request)
    return {kind.name: run_approach(kind, endpoint_url, SMALL) for kind in APPROACHES}


def test_the_meter_counts_what_each_approach_writes(results: dict[str, dict[str, Any]]) -> None:
    atomic, marker = results["atomic"]["capacity"], results["transaction-marker"]["capacity"]
    # An ADD on the counter item and a put of the resource, each under 1 KB.
    assert (atomic["create"]["calls"], atomic["create"]["wcu"], atomic["create"]["rcu"]) == (2, 2, 0)
    # One transaction of two items, each billed twice.
    assert (marker["create"]["calls"], marker["create"]["wcu"]) == (1, 4)
    assert marker["ceiling_per_second"] == 1000 / 4  # the counter item: 2 WCU by the create, 2 by the delete
    # The stream consumers' writes belong to the iteration.
    assert results["paper"]["capacity"]["consumer_per_iteration"]["wcu"] > 0
    assert results["atomic"]["capacity"]["consumer_per_iteration"]["wcu"] == 0


@pytest.mark.parametrize("name", EXACT)
def test_exact_approaches_stay_exact_when_answers_are_lost(results: dict[str, dict[str, Any]], name: str) -> None:
    faults = results[name]["lost answers"]
    assert faults["faults_injected"] > 0
    assert (faults["count_error_after_creates"], faults["count_error_after_deletes"]) == (0, 0)


def test_an_atomic_counter_drifts_when_the_sdk_retries_a_write_that_landed(results: dict[str, dict[str, Any]]) -> None:
    faults = results["atomic"]["lost answers"]
    # One caller and no stream: which writes lose their answer is fixed, so the drift is too.
    assert (faults["count_error_after_creates"], faults["count_error_after_deletes"]) != (0, 0)


def test_this_project_never_shows_a_caller_a_transaction_error(results: dict[str, dict[str, Any]]) -> None:
    for phase in ("lost answers", "contention"):
        assert "transaction" not in results["this-project"][phase]["caller_errors"]


# --- the conflict model ---------------------------------------------------------------------------


def test_a_transaction_on_an_item_another_caller_is_writing_is_cancelled_and_a_write_on_an_item_in_a_transaction_fails(
    backend: Backend,
) -> None:
    dynamodb = boto3.client("dynamodb", endpoint_url=backend.endpoint_url, config=SDK_CONFIG)
    wire = Wire(dynamodb, fault_every=0)
    key = {"pk": {"S": "A"}, "sk": {"S": "counter"}}
    in_flight, release = threading.Event(), threading.Event()

    def hold(**_: Any) -> None:
        if threading.current_thread().name == "holder":
            in_flight.set()
            release.wait(10)

    dynamodb.meta.events.register("before-send.dynamodb", hold)  # called after the wire's more specific hooks

    def write_in_flight(call: Any) -> threading.Thread:
        holder = threading.Thread(target=call, name="holder")
        in_flight.clear()
        holder.start()
        assert in_flight.wait(10)
        return holder

    put = {"TableName": backend.table, "Item": {**key, "count": {"N": "0"}}}
    holder = write_in_flight(lambda: dynamodb.put_item(**put))
    with pytest.raises(ClientError) as cancelled:
        dynamodb.transact_write_items(TransactItems=[{"Put": put}])
    release.set()
    holder.join()
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert [reason["Code"] for reason in cancelled.value.response["CancellationReasons"]] == ["TransactionConflict"]

    release.clear()
    holder = write_in_flight(lambda: dynamodb.transact_write_items(TransactItems=[{"Put": put}]))
    with pytest.raises(ClientError) as refused:
        dynamodb.put_item(**put)
    dynamodb.put_item(TableName=backend.table, Item={**key, "sk": {"S": "other"}})  # another item: no conflict
    release.set()
    holder.join()
    assert refused.value.response["Error"]["Code"] == "TransactionConflictException"
    assert wire.conflicts == 2


def test_with_three_types_this_projects_limits_are_the_accounts_types_each_kept_exact(backend: Backend) -> None:
    """`make bench --types 3`: `acme`, `acme/type-1` and `acme/type-2` are the three types of one
    account, which the callers race across while every third write loses its answer."""
    dynamodb = boto3.client("dynamodb", endpoint_url=backend.endpoint_url, config=SDK_CONFIG)
    approach = ThisProject(dynamodb, boto3.client("dynamodbstreams", endpoint_url=backend.endpoint_url), "bench-types")
    approach.create_table()
    approach.connect()
    wire = Wire(dynamodb, fault_every=3, conflicts=False)
    found = measure_failures(approach, "acme", wire, workers=2, resources=3, standing=1, types=3)
    assert found["faults_injected"] > 0
    assert (found["count_error_after_creates"], found["count_error_after_deletes"]) == (0, 0)
    account = get_account(DynamoApiStore(DynamoTable(dynamodb, "bench-types")), "acme")
    assert [usage.quota for usage in account.types] == [Quota("acme", "type-1"), Quota("acme", "type-2")]
    assert [usage.eventual for usage in (account.default, *account.types)] == [1, 1, 1]  # the standing one each
