"""Sweeper: run on a schedule (EventBridge), and by operators on demand (python -m ops sweep).

It applies resources pending for longer than a threshold, and heals accounts that went quiet.
Metrics say what it found, so a sweep that keeps finding work points at a broken pipeline.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.adapters.grant_index import DynamoGrantIndex
from functions.core.grants import sweep_grants
from functions.core.offboarding import finish_deletions
from functions.core.sweeper import SweepReport, sweep
from functions.shared.observability import logger, metrics, tracer
from functions.shared.wiring import Wiring
from functions.shared.wiring import default as default_wiring


def run_sweep(wiring: Wiring) -> SweepReport:
    return sweep(
        counting=wiring.counting_store,
        pending=wiring.counting_store,
        healing=wiring.healing_store,
        activity=wiring.healing_store,
        audits=wiring.audit_reads,
        now=wiring.clock.now(),
        settings=wiring.settings.sweep,
        tombstone_retention=wiring.settings.tombstone_retention,
        end_grants=lambda now, lookback: (
            sweep_grants(wiring.api_store, DynamoGrantIndex(wiring.table), now, lookback).ended
        ),
    )


def erase_deleted_accounts(wiring: Wiring) -> int:
    """Erase the accounts whose deletion's fence is older than the heal's quiet time (six times the
    API function's timeout): no create that reserved before the fence can still land."""
    return finish_deletions(wiring.offboarding_store, wiring.clock.now(), wiring.settings.sweep.quiet)


def summary(report: SweepReport) -> dict[str, Any]:
    return {
        "pending": {outcome.value: count for outcome, count in report.pending.outcomes.items()},
        "pending_failed": len(report.pending.failed),
        "heals": {outcome.value: count for outcome, count in report.heals.items()},
        "busy_accounts": report.busy_accounts,
        "dead_leases_settled": report.dead_leases,
        "audits": dict(report.audits),
        "grants_ended": report.grants_ended,
    }


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext, wiring: Wiring | None = None) -> dict[str, Any]:
    wiring = wiring or default_wiring()
    report = run_sweep(wiring)
    erased = erase_deleted_accounts(wiring)
    metrics.add_metric(name="AccountsErased", unit=MetricUnit.Count, value=erased)
    found = sum(report.pending.outcomes.values())
    metrics.add_metric(name="SweepPendingFound", unit=MetricUnit.Count, value=found)
    metrics.add_metric(name="SweepPendingFailed", unit=MetricUnit.Count, value=len(report.pending.failed))
    metrics.add_metric(name="DeadLeasesSettled", unit=MetricUnit.Count, value=report.dead_leases)
    # The alarm CountersDisagreeWithItems watches AuditDrift (infra/monitoring.py).
    metrics.add_metric(name="AuditDrift", unit=MetricUnit.Count, value=report.audits["drift"])
    metrics.add_metric(name="AuditInconclusive", unit=MetricUnit.Count, value=report.audits["inconclusive"])
    for finding in report.drifted:
        logger.warning(
            "audit found drift",
            extra={
                "account": finding.quota.account_id,
                "resource_type": finding.quota.resource_type,
                "problems": list(finding.problems),
            },
        )
    for outcome, count in report.heals.items():
        metrics.add_metric(name=f"Heal{outcome.name.title().replace('_', '')}", unit=MetricUnit.Count, value=count)
    result = {**summary(report), "accounts_erased": erased}
    logger.info("sweep finished", extra=result)
    return result
