"""The request shapes `make test` proves against DynamoDB Local (tests/support/request_shapes.py):
what makes two requests one shape, and the notes a test's sessions take."""

from __future__ import annotations

import json
from typing import Any

import botocore.session

from tests.support.request_shapes import DYNAMODB_LOCAL, MOTO, RequestShapes, shape_of
from tests.unit.test_makefile import planned

UPDATE = {
    "TableName": "counter-1",
    "Key": {"pk": {"S": "ACCOUNT#acme"}, "sk": {"S": "ACCOUNT"}},
    "UpdateExpression": "SET #l0 = :v0 ADD room :v1",
    "ConditionExpression": "limit_version = :v2",
    "ExpressionAttributeNames": {"#l0": "limit"},
    "ExpressionAttributeValues": {":v0": {"N": "10"}, ":v1": {"N": "3"}, ":v2": {"N": "7"}},
}


def test_requests_differing_only_in_their_table_keys_values_or_numbering_are_one_shape() -> None:
    renumbered = {
        **UPDATE,
        "TableName": "counter-2",
        "Key": {"pk": {"S": "ACCOUNT#other"}, "sk": {"S": "ACCOUNT#3"}},
        "UpdateExpression": "SET #l4 = :v4 ADD room :v5",
        "ConditionExpression": "limit_version = :v6",
        "ExpressionAttributeValues": {":v4": {"N": "1"}, ":v5": {"N": "0"}, ":v6": {"N": "1"}},
    }
    assert shape_of("UpdateItem", renumbered) == shape_of("UpdateItem", UPDATE)


def test_what_dynamodb_checks_of_a_request_makes_another_shape() -> None:
    other_values = {**UPDATE["ExpressionAttributeValues"], ":v2": {"S": "7"}}  # type: ignore[dict-item]
    variants = [
        {**UPDATE, "ConditionExpression": "limit_version = :v2 AND attribute_exists(pk)"},
        {**UPDATE, "UpdateExpression": "SET #l0 = :v0 REMOVE room"},
        {**UPDATE, "ExpressionAttributeValues": other_values},
        {**UPDATE, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"},
    ]
    shapes = {shape_of("UpdateItem", UPDATE), shape_of("PutItem", UPDATE)}
    shapes |= {shape_of("UpdateItem", variant) for variant in variants}
    assert len(shapes) == 2 + len(variants)


def test_a_transaction_is_the_set_of_its_actions_shapes_in_any_order() -> None:
    put: dict[str, Any] = {"Put": {"TableName": "t", "Item": {}, "ConditionExpression": "attribute_not_exists(pk)"}}
    update: dict[str, Any] = {"Update": UPDATE}
    one = shape_of("TransactWriteItems", {"TransactItems": [put, update]})
    assert one == shape_of("TransactWriteItems", {"TransactItems": [update, put]})
    assert one != shape_of("TransactWriteItems", {"TransactItems": [put]})
    assert json.loads(one)[0] == "TransactWriteItems"


def test_a_session_notes_its_requests_under_the_running_tests_engine_and_tells_those_only_moto_received() -> None:
    from tests.support.sessions import new_session

    shapes = RequestShapes()
    session = new_session(region_name="us-east-1")
    shapes.watch(session)
    model = botocore.session.get_session().get_service_model("dynamodb").operation_model("UpdateItem")

    def send(params: dict[str, Any]) -> None:  # what the client emits before it builds a request
        session.events.emit("before-parameter-build.dynamodb.UpdateItem", params=params, model=model)

    send(UPDATE)  # no handler-tier test running: not noted
    assert shapes.as_json() == {MOTO: [], DYNAMODB_LOCAL: []}
    shapes.engine = MOTO
    send(UPDATE)
    send({**UPDATE, "ConditionExpression": "attribute_exists(pk)"})
    shapes.engine = DYNAMODB_LOCAL
    send(UPDATE)
    assert shapes.only_on_moto() == [shape_of("UpdateItem", {**UPDATE, "ConditionExpression": "attribute_exists(pk)"})]
    other = RequestShapes()
    other.add(shapes.as_json())  # a worker's notes, as the controller receives them
    assert other.only_on_moto() == shapes.only_on_moto()


def test_make_test_runs_the_handler_tier_mixed_so_the_shapes_are_checked() -> None:
    [pytest_command] = [line for line in planned("test") if line[1:3] == ["-m", "pytest"]]
    assert pytest_command[pytest_command.index("--emulator") + 1] == "mixed"
    assert not [argument for argument in pytest_command[3:] if not argument.startswith("-") and "/" in argument]
