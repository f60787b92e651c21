"""The default stack's template for the tiers that read it (tables, the runtime's parsers, IAM):
synthesized once for the whole test session, not once per process.

It comes from the local runtime's synthesis cache (local/deploy.py, `.local/synth`, keyed by every
input file's bytes): the test workers that start together on a fresh clone wait for the one that
synthesizes, and a running system started later deploys the same file. A worker that needs no
other template then never starts CDK's Node process: each cost a worker about 7 s of CPU (2026-11-27).
The infra tier synthesizes in-process, as it tests the synthesis itself.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from local.deploy import synthesize
from local.product import APP


def synth_template_json() -> dict[str, Any]:
    """The default stack's template (cdk.json's context, bundling off); callers get their own copy."""
    return copy.deepcopy(_default_template())


@functools.cache
def _default_template() -> dict[str, Any]:
    return synthesize(APP)
