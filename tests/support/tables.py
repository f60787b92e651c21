"""Tables for tests, created from the synthesized CDK template so they cannot drift from the stack."""

from __future__ import annotations

import copy
import functools
from typing import Any

from tests.support.template import synth_template_json

_COPIED_PROPERTIES = ("KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes", "StreamSpecification")


def table_definition() -> dict[str, Any]:
    """The stack's one AWS::DynamoDB::Table, as CreateTable arguments (name left to the caller)."""
    return copy.deepcopy(_table_definition())


@functools.cache
def _table_definition() -> dict[str, Any]:
    # Read from the whole template once per process: copying it (every test makes a table) cost
    # more CPU than the table's creation.
    tables = [
        resource["Properties"]
        for resource in synth_template_json()["Resources"].values()
        if resource["Type"] == "AWS::DynamoDB::Table"
    ]
    assert len(tables) == 1, f"expected one table in the template, found {len(tables)}"
    properties = tables[0]
    definition = {name: properties[name] for name in _COPIED_PROPERTIES if name in properties}
    definition["StreamSpecification"] = {"StreamEnabled": True, **properties["StreamSpecification"]}
    definition["BillingMode"] = properties.get("BillingMode", "PAY_PER_REQUEST")
    return definition


def create_table(client: Any, name: str) -> str:
    """Create the table and return its stream ARN."""
    description = client.create_table(TableName=name, **table_definition())["TableDescription"]
    client.get_waiter("table_exists").wait(TableName=name)
    return str(description["LatestStreamArn"])
