"""A CDK app with the limits API and the projects service in one stack: the `HybridCounter`
construct (docs/construct.md) and `ProjectsService` given it. The app a user copies when the
limits are part of their own app rather than a stack of their own.

    npx cdk deploy --app "python -m examples.projects.app"

(from the repository root, with the construct installed or on PYTHONPATH; Docker for the
function's package, see README.md "Deploy it").
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_

from examples.projects.stack import ProjectsService
from infra.hybrid_counter import HybridCounter, HybridCounterProps


def build_stack(app: cdk.App, stack_id: str = "Saas", *, code: lambda_.Code | None = None) -> cdk.Stack:
    """`code`: the projects function's package, if not the one stack.py builds in Docker."""
    stack = cdk.Stack(app, stack_id)
    limits = HybridCounter(stack, "Limits", HybridCounterProps(alarm_email="ops@example.com"))
    users = cognito.UserPool(
        stack,
        "Users",
        custom_attributes={"tenant": cognito.StringAttribute(mutable=False)},
    )
    ProjectsService(stack, "Projects", limits=limits, user_pool=users, code=code)
    cdk.CfnOutput(stack, "LimitsApiUrl", value=limits.api_url)
    if limits.admin_role is not None:  # the role the control plane assumes to set each tenant's limit
        cdk.CfnOutput(stack, "LimitsAdminRoleArn", value=limits.admin_role.role_arn)
    return stack


if __name__ == "__main__":
    app = cdk.App()
    build_stack(app)
    app.synth()
