"""EventBridge schedules as the local runtime reads and fires them."""

from __future__ import annotations

import pytest

from local.runtime import rate_seconds, scheduled_event


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [("rate(5 minutes)", 300.0), ("rate(1 minute)", 60.0), ("rate(2 hours)", 7200.0), ("rate(1 day)", 86400.0)],
)
def test_rates(expression: str, seconds: float) -> None:
    assert rate_seconds(expression) == seconds


@pytest.mark.parametrize("expression", ["cron(0 12 * * ? *)", "rate(five minutes)", ""])
def test_other_expressions_are_not_run(expression: str) -> None:
    assert rate_seconds(expression) is None


def test_the_scheduled_event_has_eventbridges_shape() -> None:
    event = scheduled_event("arn:aws:events:us-east-1:000000000000:rule/sweeper", "us-east-1")
    assert event["detail-type"] == "Scheduled Event"
    assert event["source"] == "aws.events"
    assert event["account"] == "000000000000"
    assert event["resources"] == ["arn:aws:events:us-east-1:000000000000:rule/sweeper"]
    assert event["time"].endswith("Z")
