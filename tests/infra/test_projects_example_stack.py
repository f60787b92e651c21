"""The worked example's infrastructure (examples/projects/stack.py) synthesizes, with what its
handler needs and only that: its table, the function, the permission on the limits API's
resource paths, and its API behind the user pool."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from tests.support.projects_example import LIMITS_API_ARN, LIMITS_API_URL, synthesized_template


@pytest.fixture(scope="module")
def template() -> Template:
    return Template.from_json(synthesized_template())


def policy_statements(template: Template) -> list[dict[str, Any]]:
    (policy,) = template.find_resources("AWS::IAM::Policy").values()
    statements: list[dict[str, Any]] = policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_the_table_is_keyed_by_tenant_and_name_with_ttl_on_tombstones(template: Template) -> None:
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": "tenant_id", "KeyType": "HASH"},
                {"AttributeName": "name", "KeyType": "RANGE"},
            ],
            "BillingMode": "PAY_PER_REQUEST",
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
        },
    )


def test_the_function_knows_its_table_and_the_limits_api(template: Template) -> None:
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "handler.handler",
            "Runtime": "python3.12",
            "Timeout": 29,
            "Environment": {
                "Variables": {"PROJECTS_TABLE": {"Ref": Match.any_value()}, "LIMITS_API_URL": LIMITS_API_URL}
            },
        },
    )


def test_the_function_may_reserve_and_release_slots_and_nothing_else_on_the_limits_api(template: Template) -> None:
    (invoke,) = [s for s in policy_statements(template) if s["Action"] == "execute-api:Invoke"]
    allowed = invoke["Resource"]

    def may(method: str, path: str) -> bool:
        # IAM's `*` matches any characters, `/` included, as fnmatch's does.
        return any(fnmatchcase(f"{LIMITS_API_ARN}/{method}{path}", pattern) for pattern in allowed)

    assert may("POST", "/accounts/acme/resources")
    assert may("DELETE", "/accounts/acme/resources/r-1")
    assert may("GET", "/accounts/acme/resources")
    assert not may("PUT", "/accounts/acme")  # setting a limit is the admin's
    assert not may("GET", "/accounts/acme")


def test_the_function_reads_and_writes_its_table_items_only(template: Template) -> None:
    (table_access,) = [s for s in policy_statements(template) if s["Action"] != "execute-api:Invoke"]
    assert sorted(table_access["Action"]) == [
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
    ]


def test_every_method_of_its_api_is_behind_the_user_pool(template: Template) -> None:
    methods = template.find_resources("AWS::ApiGateway::Method")
    assert methods
    for method in methods.values():
        assert method["Properties"]["AuthorizationType"] == "COGNITO_USER_POOLS"
    template.has_resource_properties("AWS::ApiGateway::Authorizer", {"Type": "COGNITO_USER_POOLS"})
