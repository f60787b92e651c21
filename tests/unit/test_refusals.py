"""Limit Refused events' pure core (functions/core/refusals.py): the refusal line, windows, batch
ids and the announcement's delay."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from functions.core.model import Quota
from functions.core.refusals import (
    MAX_DELAY,
    Refusal,
    Window,
    announce_delay,
    parse_refusal,
    parse_window_message,
    refusal_log_fields,
    window_message,
    windows_of,
)

ACME = Quota("acme")
MINUTE = datetime(2026, 11, 25, 13, 37, tzinfo=UTC)


def test_the_refusal_line_is_read_back_and_other_lines_are_not_refusals() -> None:
    line = json.dumps({"message": "create refused", **refusal_log_fields(Quota("acme", "seats"), 4)})
    assert parse_refusal(line, MINUTE, "1") == Refusal(Quota("acme", "seats"), 4, MINUTE, "1")
    for other in ("not json", "[]", '{"usage_event": "LimitRefused", "account_id": "acme"}', '{"message": "x"}'):
        assert parse_refusal(other, MINUTE, "1") is None


def test_refusals_are_grouped_by_quota_and_minute_and_a_group_s_id_depends_on_its_log_events_only() -> None:
    at = [MINUTE + timedelta(seconds=s) for s in (0, 59, 60, 30)]
    refusals = [Refusal(ACME, 3, moment, str(index)) for index, moment in enumerate(at)]
    counts = windows_of(refusals)
    assert [(c.window.start, c.refused) for c in counts] == [(MINUTE, 3), (MINUTE + timedelta(minutes=1), 1)]
    assert windows_of(reversed(refusals))[0].batch_id == counts[0].batch_id  # the same events, the same id
    assert windows_of(refusals[:2])[0].batch_id != counts[0].batch_id


def test_a_window_is_announced_after_its_minute_and_the_grace_at_most_fifteen_minutes_on() -> None:
    window = Window.of(ACME, MINUTE + timedelta(seconds=42))
    assert (window.start, window.end, window.name) == (MINUTE, MINUTE + timedelta(minutes=1), "2026-11-25T13:37Z")
    grace = timedelta(seconds=90)
    assert announce_delay(window, MINUTE + timedelta(seconds=42), grace) == timedelta(seconds=18 + 90)
    assert announce_delay(window, MINUTE + timedelta(minutes=5), grace) == grace
    assert announce_delay(window, MINUTE, timedelta(hours=1)) == MAX_DELAY


def test_a_window_s_event_id_is_stable_and_its_own() -> None:
    window = Window(ACME, MINUTE)
    assert window.event_id == Window.of(ACME, MINUTE + timedelta(seconds=1)).event_id
    assert window.event_id != Window(ACME, MINUTE + timedelta(minutes=1)).event_id
    assert window.event_id != Window(Quota("acme", "seats"), MINUTE).event_id
    assert parse_window_message(window_message(window)) == window


def test_a_shadow_refusal_is_marked_and_counted_in_a_window_of_its_own() -> None:
    """A shadow quota's line says `"shadow": true` (an enforced one says nothing, as before); its
    refusals group into the shadow window of the minute, with its own key, event id and message."""
    enforced = json.loads(json.dumps(refusal_log_fields(ACME, 3)))
    assert "shadow" not in enforced
    line = json.dumps({"message": "create admitted in shadow mode", **refusal_log_fields(ACME, 3, shadow=True)})
    shadow = parse_refusal(line, MINUTE, "2")
    assert shadow == Refusal(ACME, 3, MINUTE, "2", shadow=True)
    marked = json.dumps({**json.loads(line), "shadow": "yes"})
    assert parse_refusal(marked, MINUTE, "3") is None  # a field not as the API writes it: not a refusal
    counts = windows_of([Refusal(ACME, 3, MINUTE, "1"), shadow])
    assert [(c.window.shadow, c.refused) for c in counts] == [(False, 1), (True, 1)]
    window = counts[1].window
    assert (window.name, window.key_name) == ("2026-11-25T13:37Z", "2026-11-25T13:37Z#shadow")
    assert window.event_id != Window(ACME, MINUTE).event_id
    assert parse_window_message(window_message(window)) == window
    assert "shadow" not in json.loads(window_message(Window(ACME, MINUTE)))  # the message before shadow mode
