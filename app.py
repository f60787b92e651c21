#!/usr/bin/env python3
"""CDK entry point: `npx cdk synth` / `npx cdk deploy` run this through cdk.json.

Its context keys (`-c key=value`) are declared in infra/options.py and listed in docs/construct.md.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk

from infra import options
from infra.bundling import PipRunner, run_pip
from infra.stack import HybridCounterStack


def build_app(pip: PipRunner = run_pip, **app_props: Any) -> cdk.App:
    """The app; `pip` runs the bundler's pip install (tests give one that records it)."""
    app = cdk.App(**app_props)
    stack_name = app.node.try_get_context(options.STACK_NAME.key) or options.STACK_NAME.default
    HybridCounterStack(app, str(stack_name), pip=pip)
    return app


if __name__ == "__main__":
    build_app().synth()
