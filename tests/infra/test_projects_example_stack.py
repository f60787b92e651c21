"""The worked example's infrastructure (examples/projects/stack.py) synthesizes, with what its
handler needs and only that: its table, the function, the permission on the limits API's
resource paths, and its API behind the user pool; and examples/projects/app.py puts it in one stack
with the limits API as a `HybridCounter`, granted by the construct."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from local.iam_policy import allowed
from tests.support.projects_example import (
    LIMITS_API_ARN,
    LIMITS_API_URL,
    synthesized_app_template,
    synthesized_template,
    table_definition,
)


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

    assert may("POST", "/accounts/acme/types/projects/resources")
    assert may("DELETE", "/accounts/acme/types/projects/resources/r-1")
    assert may("GET", "/accounts/acme/types/projects/resources")  # reconcile lists the slots
    assert not may("PUT", "/accounts/acme/types/projects")  # setting a limit is the admin's
    assert not may("PUT", "/accounts/acme")
    assert not may("GET", "/accounts/acme")
    assert not may("POST", "/accounts/acme/resources")  # the default type's slots are another's
    assert not may("DELETE", "/accounts/acme/types/seats/resources/r-1")  # and so are other types'


def test_the_stack_grants_the_type_the_handler_reserves() -> None:
    from examples.projects import handler, stack

    assert stack.RESOURCE_TYPE == handler.RESOURCE_TYPE


def test_the_table_try_locally_creates_is_the_stack_s(template: Template) -> None:
    """examples/projects/try_locally.py creates the service's table in the local emulator without
    synthesizing the stack (seconds a newcomer would wait): its definition is the stack's."""
    from examples.projects.try_locally import TABLE_DEFINITION

    assert table_definition(template.to_json()) == TABLE_DEFINITION


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


# --- examples/projects/app.py: the limits API and the projects service in one stack ---------------


def resolved(value: Any, refs: dict[str, str]) -> Any:
    """A policy's Refs and Fn::Joins as CloudFormation resolves them, given each Ref's value."""
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return refs[value["Ref"]]
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolved(part, refs)) for part in parts)
    if isinstance(value, list):
        return [resolved(inner, refs) for inner in value]
    if isinstance(value, dict):
        return {key: resolved(inner, refs) for key, inner in value.items()}
    return value


REFS = {
    "AWS::Partition": "aws",
    "AWS::Region": "eu-west-1",
    "AWS::AccountId": "111122223333",
    "AWS::URLSuffix": "amazonaws.com",
}


def test_the_app_gives_the_projects_function_the_counter_s_url_and_tenant_access() -> None:
    template = synthesized_app_template()
    resources = template["Resources"]
    [api_id] = [name for name, r in resources.items() if r["Type"] == "AWS::ApiGateway::RestApi" and "Limits" in name]
    [stage_id] = [name for name, r in resources.items() if r["Type"] == "AWS::ApiGateway::Stage" and "Limits" in name]
    refs = REFS | {api_id: "abc123", stage_id: "prod"}
    [function] = [
        r["Properties"]
        for name, r in resources.items()
        if r["Type"] == "AWS::Lambda::Function" and name.startswith("ProjectsFunction")
    ]
    url = resolved(function["Environment"]["Variables"]["LIMITS_API_URL"], refs)
    assert url == "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/"
    role_id = function["Role"]["Fn::GetAtt"][0]
    statements = [
        resolved(statement, refs)
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]
        for statement in r["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "execute-api:Invoke"
    ]

    def may(method: str, path: str) -> bool:
        arn = f"arn:aws:execute-api:eu-west-1:111122223333:abc123/prod/{method}{path}"
        return allowed([{"Statement": statements}], "execute-api:Invoke", arn, {})

    assert may("POST", "/accounts/acme/types/projects/resources")
    assert may("DELETE", "/accounts/acme/types/projects/resources/r-1")
    assert not may("PUT", "/accounts/acme/types/projects")  # setting a limit is the admin's
    assert not may("PUT", "/accounts/acme")


@pytest.mark.parametrize(
    "given",
    [{}, {"limits_api_url": LIMITS_API_URL}, {"limits_api_arn": LIMITS_API_ARN}],
    ids=["nothing", "url-only", "arn-only"],
)
def test_the_limits_api_is_given_whole(given: dict[str, str]) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_cognito as cognito

    from examples.projects.stack import ProjectsService

    stack = cdk.Stack(cdk.App(context={"aws:cdk:bundling-stacks": []}), "Saas")
    with pytest.raises(ValueError, match="give the limits API"):
        ProjectsService(stack, "Projects", user_pool=cognito.UserPool(stack, "Users"), **given)  # type: ignore[arg-type]
