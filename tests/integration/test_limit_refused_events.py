"""Limit Refused events end to end (docs/events.md): a flood of creates refused at a quota's limit
within one minute is one event carrying how many were refused, read from a queue a rule of the
stack's bus sends to. Locally the API's log lines reach the aggregator through the template's
subscription filter (local/log_subscriptions.py), and a minute is announced a second after it ends
(tests/integration/conftest.py REFUSAL_GRACE_SECONDS); on AWS a minute and a half after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hybrid_counter_client import LimitExceeded

from functions.usage_events.models import LimitRefused
from local.http_client import poll
from local.product import new_account
from tests.integration.conftest import RunningSystem
from tests.integration.test_usage_events import Subscription, subscription  # noqa: F401 - a fixture

REFUSED = 8
# The flood starts with at least this much of its minute left, so it fits in one minute.
FLOOD_ROOM = timedelta(seconds=15)
# Until the minute's end, the grace (90 s on AWS), and the way through the aggregator, the
# emitter, the publisher and the bus.
ANNOUNCED_WITHIN_SECONDS = 60 + 90 + 60


def minute_of(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


@pytest.mark.slow
def test_a_flood_of_refused_creates_in_one_minute_is_one_event_with_their_count(
    running_system: RunningSystem,
    subscription: Subscription,  # noqa: F811 - the fixture
) -> None:
    client = running_system.client
    account_id = new_account(client, "refused", limit=1)
    client.create_resource(account_id, "kept")
    # Wall-clock time, as Lambda and CloudWatch Logs stamp the lines: wait for a minute with room.
    start = poll(lambda: datetime.now(UTC), lambda now: minute_of(now) + timedelta(minutes=1) - now >= FLOOD_ROOM, 61)
    for index in range(REFUSED):
        with pytest.raises(LimitExceeded):
            client.create_resource(account_id, f"refused-{index}")
    assert minute_of(datetime.now(UTC)) == minute_of(start), "the flood did not fit in one minute"

    def mine() -> list[LimitRefused]:
        received = subscription.receive()
        details = [e["detail"] for e in received if e["detail-type"] == LimitRefused.DETAIL_TYPE]
        return [LimitRefused.model_validate(d) for d in details if d["accountId"] == account_id]

    events = poll(mine, bool, ANNOUNCED_WITHIN_SECONDS, interval=0.5)
    assert len({event.eventId for event in events}) == 1  # copies, if any, carry one id
    event = events[0]
    assert (event.refused, event.limit, event.resourceType) == (REFUSED, 1, "default")
    window_start = minute_of(start)
    assert event.windowStart == window_start.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert event.windowEnd == (window_start + timedelta(minutes=1)).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )
