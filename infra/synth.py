"""Synthesize the stack in-process, as `cdk synth` would, for tests and local tooling.

The context of cdk.json (feature flags, defaults) is applied, so the template matches the CLI's.
Bundling is switched off: no pip run, no network, and the asset points at the source folder.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import aws_cdk as cdk

from infra import options
from infra.outputs import DEFAULT_STACK_NAME
from infra.stack import HybridCounterStack

CDK_JSON: Final = Path(__file__).resolve().parent.parent / "cdk.json"


def cdk_json_context() -> dict[str, Any]:
    context: dict[str, Any] = json.loads(CDK_JSON.read_text(encoding="utf-8")).get("context", {})
    return context


def synthesize_stack_template(
    context: Mapping[str, Any] | None = None, stack_name: str = DEFAULT_STACK_NAME
) -> dict[str, Any]:
    """Template of a fresh synth with cdk.json's context plus `context` (bundling always off)."""
    app = cdk.App(
        context={
            **cdk_json_context(),
            **(context or {}),
            options.CDK_BUNDLING_STACKS_CONTEXT_KEY: [],
        }
    )
    stack = HybridCounterStack(app, stack_name)
    template: dict[str, Any] = app.synth().get_stack_by_name(stack.stack_name).template
    return template


@functools.lru_cache(maxsize=1)
def _default_template() -> dict[str, Any]:
    return synthesize_stack_template()


def synth_template_json() -> dict[str, Any]:
    """The default stack's template, synthesized once per process; callers get their own copy."""
    return copy.deepcopy(_default_template())
