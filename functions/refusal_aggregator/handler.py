"""Refusal aggregator: counts the API's refusal lines, which CloudWatch Logs' subscription filter
sends it, into their quota's refused windows, one update per window, and schedules each window's
announcement when it opens (functions/core/refusals.py, docs/events.md).

Lambda invokes it asynchronously: a failed invocation is retried (twice), then goes to the
refusals' dead-letter queue. A retry counts nothing twice (each window remembers the batches it
counted).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.adapters.refusal_payloads import refusals_of
from functions.core.refusals import aggregate
from functions.shared.observability import logger, metrics, tracer
from functions.shared.wiring import Wiring
from functions.shared.wiring import default as default_wiring


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext, wiring: Wiring | None = None) -> None:
    wiring = wiring or default_wiring()
    report = aggregate(
        refusals_of(event),
        wiring.refused_windows,
        wiring.announcement_queue,
        wiring.clock.now(),
        wiring.settings.refusal_grace,
    )
    metrics.add_metric(name="RefusalsCounted", unit=MetricUnit.Count, value=report.counted)
    if report.late:  # their minute was announced already: in no event (docs/events.md)
        metrics.add_metric(name="RefusalsNotAnnounced", unit=MetricUnit.Count, value=report.late)
        logger.warning("refusals arrived after their minute was announced", extra={"refusals": report.late})
    logger.info(
        "refusals counted",
        extra={"counted": report.counted, "late": report.late, "repeated": report.repeated},
    )
