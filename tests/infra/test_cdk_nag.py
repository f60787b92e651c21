"""cdk-nag's AwsSolutions rules over the real stack (3.x: a CDK validation plugin): nothing may be
found but what infra/nag.py acknowledges, each with its reason."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from cdk_nag import AwsSolutionsChecks

from infra import constants
from infra.stack import HybridCounterStack
from infra.synth import cdk_json_context

JWT = {
    constants.AUTHORIZER_CONTEXT_KEY: constants.AUTHORIZER_JWT,
    constants.JWT_ISSUER_CONTEXT_KEY: "https://issuer.example.com",
    constants.JWT_AUDIENCE_CONTEXT_KEY: "counter",
}


@pytest.mark.parametrize("context", [{}, JWT], ids=["iam", "jwt"])
def test_the_awssolutions_rules_find_nothing_unexplained(tmp_path: Path, context: dict[str, str]) -> None:
    app = cdk.App(
        outdir=str(tmp_path),
        context={**cdk_json_context(), constants.CDK_BUNDLING_STACKS_CONTEXT_KEY: [], **context},
    )
    HybridCounterStack(app, constants.DEFAULT_STACK_NAME)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    try:
        app.synth()
    except RuntimeError as failed:
        report = tmp_path / "validation-report.json"
        pytest.fail(f"{failed}\n{report.read_text()[:6000] if report.exists() else ''}")
