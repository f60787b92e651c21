"""Fixtures of the infrastructure tests: the stack synthesized once, bundling off."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# `pytest` (unlike `python -m pytest`) does not put the repo root on sys.path; infra and app live there.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
# jsii prints a large banner on every start under Node 20; it carries no information for tests.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk.assertions import Template  # noqa: E402  (needs the environment above)

from infra.synth import synth_template_json  # noqa: E402


@pytest.fixture(scope="session")
def template_json() -> dict[str, Any]:
    return synth_template_json()


@pytest.fixture(scope="session")
def template(template_json: dict[str, Any]) -> Template:
    return Template.from_json(template_json)
