"""Tenants' data stays out of X-Ray (docs/security.md): the API handler records neither its answers
nor its errors in a trace's metadata.

There is no X-Ray daemon here (tracing is disabled in tests), so the tracer's provider is replaced
by one that records what Powertools would send: `capture_lambda_handler` opens a subsegment for
each invocation and, unless told otherwise, puts the handler's response (or its exception) in it
as metadata (Powertools' Tracer docs, "Disabling response auto-capture", and its providers)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.handler.conftest import Harness
from tests.support.faults import Faults


class RecordingSubsegment:
    def __init__(self) -> None:
        self.metadata: list[tuple[str, Any]] = []

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        self.metadata.append((key, value))

    def put_annotation(self, key: str, value: Any) -> None:
        pass


class RecordingProvider:
    def __init__(self) -> None:
        self.subsegments: list[RecordingSubsegment] = []

    @contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Iterator[RecordingSubsegment]:
        subsegment = RecordingSubsegment()
        self.subsegments.append(subsegment)
        yield subsegment


def test_api_answers_and_errors_are_never_trace_metadata(
    harness: Harness, faults: Faults, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.shared.observability import tracer

    provider = RecordingProvider()
    monkeypatch.setattr(tracer, "provider", provider)
    harness.api.put_account("acme", 5)
    created = harness.api.create("acme", "vm", secret="tenant data")
    assert created.status == 201
    assert harness.api.request("GET", f"/accounts/acme/resources/{created.json()['resourceId']}").status == 200
    faults.crash_after("PutItem")  # an error the handler does not answer: it reaches the tracer
    with pytest.raises(faults.SimulatedCrash):
        harness.api.create("acme", "vm", secret="tenant data")

    assert len(provider.subsegments) == 4  # each invocation ran in its own subsegment
    assert [subsegment.metadata for subsegment in provider.subsegments] == [[], [], [], []]
