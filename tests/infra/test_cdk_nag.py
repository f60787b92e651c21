"""cdk-nag's AwsSolutions rules over the real stack (3.x: a CDK validation plugin): nothing may be
found but what infra/nag.py acknowledges, each with its reason. The same holds for the construct
as users add it: twice in one stack, and inside a Stage of their own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import aws_cdk as cdk
import pytest
from cdk_nag import AwsSolutionsChecks

from infra import options
from infra.hybrid_counter import ApiLogsRole, HybridCounter, HybridCounterProps
from infra.outputs import DEFAULT_STACK_NAME
from infra.stack import HybridCounterStack
from infra.synth import cdk_json_context

JWT = {
    options.AUTHORIZER.key: options.Authorizer.JWT.value,
    options.JWT_ISSUER.key: "https://issuer.example.com",
    options.JWT_AUDIENCE.key: "counter",
}
# Every optional target of the usage events: the webhook's API destination and the alarm email.
EVENT_TARGETS = {
    options.USAGE_WEBHOOK_URL.key: "https://hooks.example.com/usage",
    options.USAGE_WEBHOOK_SECRET.key: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:hook-AbCdEf",
    options.ALARM_EMAIL.key: "ops@example.com",
}


def the_app_s_stack(app: cdk.App) -> None:
    HybridCounterStack(app, DEFAULT_STACK_NAME)


def two_in_one_stack(app: cdk.App) -> None:
    stack = cdk.Stack(app, "Shop")
    HybridCounter(stack, "Orders")
    HybridCounter(stack, "Projects", HybridCounterProps(api_logs_role=ApiLogsRole.EXISTING))


def in_a_stage(app: cdk.App) -> None:
    HybridCounter(cdk.Stack(cdk.Stage(app, "Prod"), "Limits"), "Counter")


@pytest.mark.parametrize(
    ("build", "context"),
    [
        (the_app_s_stack, {}),
        (the_app_s_stack, JWT),
        (the_app_s_stack, EVENT_TARGETS),
        (two_in_one_stack, {}),
        (in_a_stage, {}),
    ],
    ids=["iam", "jwt", "event-targets", "two-in-one-stack", "in-a-stage"],
)
def test_the_awssolutions_rules_find_nothing_unexplained(
    tmp_path: Path, build: Callable[[cdk.App], None], context: dict[str, str]
) -> None:
    app = cdk.App(
        outdir=str(tmp_path),
        context={**cdk_json_context(), options.CDK_BUNDLING_STACKS_CONTEXT_KEY: [], **context},
    )
    build(app)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    try:
        app.synth()
    except RuntimeError as failed:
        report = tmp_path / "validation-report.json"
        pytest.fail(f"{failed}\n{report.read_text()[:6000] if report.exists() else ''}")
