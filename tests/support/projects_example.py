"""The projects example's stack (examples/projects/stack.py), synthesized as a user's app would,
without bundling (which needs Docker): its template, and its table as CreateTable arguments."""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

LIMITS_API_URL = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/"
LIMITS_API_ARN = "arn:aws:execute-api:eu-west-1:111122223333:abc123/prod"


def synthesized_template() -> dict[str, Any]:
    import aws_cdk as cdk
    from aws_cdk import aws_cognito as cognito

    from examples.projects.stack import ProjectsService

    # An empty list of stacks to bundle: the asset is staged, pip in Docker is not run.
    app = cdk.App(context={"aws:cdk:bundling-stacks": []})
    stack = cdk.Stack(app, "Saas", env=cdk.Environment(account="111122223333", region="eu-west-1"))
    users = cognito.UserPool(stack, "Users")
    ProjectsService(stack, "Projects", limits_api_url=LIMITS_API_URL, limits_api_arn=LIMITS_API_ARN, user_pool=users)
    template: dict[str, Any] = app.synth().get_stack_by_name("Saas").template
    return template


def synthesized_app_template() -> dict[str, Any]:
    """examples/projects/app.py's one stack: the limits construct and the projects service."""
    import aws_cdk as cdk

    from examples.projects.app import build_stack
    from infra.synth import cdk_json_context

    app = cdk.App(context={**cdk_json_context(), "aws:cdk:bundling-stacks": []})
    stack = build_stack(app)
    template: dict[str, Any] = app.synth().get_stack_by_name(stack.stack_name).template
    return template


def table_definition(template: dict[str, Any]) -> dict[str, Any]:
    """The stack's one table, as CreateTable arguments (the name left to the caller)."""
    (table,) = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    return {
        "KeySchema": table["KeySchema"],
        "AttributeDefinitions": table["AttributeDefinitions"],
        "BillingMode": table["BillingMode"],
    }
