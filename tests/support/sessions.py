"""boto3 sessions for tests: each its own, reading AWS's service models through one shared loader.

A test's handlers get a session of their own, so no event hook a fault put on an earlier test's
clients reaches them. A new session also loads and parses every service model it uses again, about
a tenth of a second of CPU per test; botocore's loader caches what it parsed, so one loader shared
by every session of the process (the operator CLI's, ops/stack.py, which its commands' sessions
share too) parses each model once.
"""

from __future__ import annotations

from ops.stack import new_session

__all__ = ["new_session"]
