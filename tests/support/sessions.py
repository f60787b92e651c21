"""boto3 sessions for tests: each its own, reading AWS's service models through one shared loader.

A test's handlers get a session of their own, so no event hook a fault put on an earlier test's
clients reaches them. A new session also loads and parses every service model it uses again, about
a tenth of a second of CPU per test; botocore's loader caches what it parsed, so one loader shared
by every session of the process (the operator CLI's, ops/stack.py, which its commands' sessions
share too) parses each model once. Each session notes the shapes of the DynamoDB requests its
clients send (tests/support/request_shapes.py).
"""

from __future__ import annotations

from typing import Any

import boto3

from ops import stack
from tests.support.request_shapes import SHAPES


def new_session(**options: Any) -> boto3.Session:
    session = stack.new_session(**options)
    SHAPES.watch(session)
    return session
