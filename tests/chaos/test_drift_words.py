"""The audit beside the clients (`--audit-repair`) tells drift that faults inject from drift that
is a bug by the audit's own words: those words must be the ones functions/core/audit.py writes."""

from __future__ import annotations

from dataclasses import replace

from chaos.run import unexplained_drift
from functions.core.audit import Recount, audit_problems
from functions.core.model import Quota

QUIET = Recount(
    quota=Quota("acme"),
    limit=40,
    best_effort_net=12,
    admitted=12,
    eventual=12,
    version=9,
    limit_version=1,
    heal_epoch=0,
    last_write_at="2026-11-27T12:00:00Z",
    healed_at="",
    resource_items=4,
    live=12,
    counted=12,
    uncounted=0,
    soft_deleted=0,
    deletes_in_flight=0,
    creates_in_flight=0,
    tombstones=0,
)


def test_the_drift_faults_inject_is_recognised_in_the_audits_words() -> None:
    lost_increment = replace(QUIET, best_effort_net=5)  # a request died between its writes
    held_slots = replace(QUIET, admitted=20)  # a reservation whose put never landed
    for recount in (lost_increment, held_slots):
        problems = audit_problems(recount)
        assert problems
        assert unexplained_drift(problems) == []


def test_drift_no_fault_injects_is_reported() -> None:
    for recount in (
        replace(QUIET, eventual=13),  # counted twice
        replace(QUIET, best_effort_net=13),  # an overcount
        replace(QUIET, admitted=11),  # the limit could be passed
    ):
        problems = audit_problems(recount)
        assert problems
        assert unexplained_drift(problems) == problems
