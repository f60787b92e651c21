"""The refusals in a CloudWatch Logs subscription's payload (`{"awslogs": {"data": ...}}`: the
log events, gzipped and base64-encoded), as the aggregator receives it and as Lambda's dead-letter
queue keeps a failed one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.data_classes import CloudWatchLogsEvent

from functions.core.refusals import Refusal, parse_refusal


def refusals_of(event: dict[str, Any]) -> list[Refusal]:
    """The refusals a subscription's payload tells of, each at its log event's time."""
    found = []
    for log_event in CloudWatchLogsEvent(event).parse_logs_data().log_events:
        at = datetime.fromtimestamp(log_event.timestamp / 1000, UTC)
        refusal = parse_refusal(log_event.message, at, log_event.get_id)
        if refusal is not None:
            found.append(refusal)
    return found
