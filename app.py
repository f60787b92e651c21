#!/usr/bin/env python3
"""CDK entry point: `npx cdk synth` / `npx cdk deploy` run this through cdk.json.

Context keys: `stackName` (default HybridCounter), `removalPolicy` (retain | destroy),
`architecture` (arm64 | x86_64: the functions' CPU and the wheels bundled for it),
`skipBundling` (true: synthesize without building the Lambda package, no network needed).
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk

from infra import constants
from infra.bundling import PipRunner, run_pip
from infra.stack import HybridCounterStack


def build_app(pip: PipRunner = run_pip, **app_props: Any) -> cdk.App:
    """The app; `pip` runs the bundler's pip install (tests give one that records it)."""
    app = cdk.App(**app_props)
    stack_name = app.node.try_get_context(constants.STACK_NAME_CONTEXT_KEY) or constants.DEFAULT_STACK_NAME
    HybridCounterStack(app, str(stack_name), pip=pip)
    return app


if __name__ == "__main__":
    build_app().synth()
