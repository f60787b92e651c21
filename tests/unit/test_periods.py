"""The calendar of periodic quotas: day and month windows, anchored or on UTC boundaries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.core.periods import (
    Period,
    PeriodKind,
    PeriodWindow,
    format_instant,
    parse_period,
)

MONTH = Period(PeriodKind.MONTH)
DAY = Period(PeriodKind.DAY)
SECOND = timedelta(seconds=1)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def window(start: datetime, end: datetime) -> PeriodWindow:
    return PeriodWindow(start, end)


def monthly(anchor: str) -> Period:
    return parse_period("month", anchor)


# --- examples ---------------------------------------------------------------------------------


def test_calendar_months_start_on_the_first_at_midnight_utc() -> None:
    assert MONTH.window_at(utc(2026, 11, 27, 15, 4, 5)) == window(utc(2026, 11, 1), utc(2026, 12, 1))
    assert MONTH.window_at(utc(2026, 2, 14)) == window(utc(2026, 2, 1), utc(2026, 3, 1))


def test_december_runs_into_january_of_the_next_year() -> None:
    december = window(utc(2026, 12, 1), utc(2027, 1, 1))
    assert MONTH.window_at(utc(2026, 12, 31, 23, 59, 59)) == december
    assert MONTH.following(december) == window(utc(2027, 1, 1), utc(2027, 2, 1))
    assert MONTH.preceding(MONTH.following(december)) == december

    fifteenth = monthly("2026-01-15T00:00:00Z")
    assert fifteenth.window_at(utc(2027, 1, 3)) == window(utc(2026, 12, 15), utc(2027, 1, 15))
    assert fifteenth.window_at(utc(2027, 1, 15)) == window(utc(2027, 1, 15), utc(2027, 2, 15))


@pytest.mark.parametrize(
    ("year", "anchor_day", "february_start", "march_start"),
    [
        # 2027 is not a leap year: February has 28 days.
        (2027, 29, utc(2027, 2, 28), utc(2027, 3, 29)),
        (2027, 30, utc(2027, 2, 28), utc(2027, 3, 30)),
        (2027, 31, utc(2027, 2, 28), utc(2027, 3, 31)),
        # 2028 is: 29 days.
        (2028, 29, utc(2028, 2, 29), utc(2028, 3, 29)),
        (2028, 30, utc(2028, 2, 29), utc(2028, 3, 30)),
        (2028, 31, utc(2028, 2, 29), utc(2028, 3, 31)),
    ],
)
def test_a_month_without_the_anchors_day_starts_on_its_last_day(
    year: int, anchor_day: int, february_start: datetime, march_start: datetime
) -> None:
    period = monthly(f"2026-01-{anchor_day}T00:00:00Z")
    january = period.window_at(utc(year, 1, anchor_day))
    assert january == window(utc(year, 1, anchor_day), february_start)
    february = period.following(january)
    assert february == window(february_start, march_start)
    assert period.window_at(february_start - SECOND) == january
    assert period.window_at(march_start - SECOND) == february
    assert period.preceding(february) == january


def test_a_month_anchored_on_the_31st_follows_every_months_last_day() -> None:
    period = monthly("2026-01-31T00:00:00Z")
    starts = [w.start for w in reversed(period.last(utc(2026, 12, 31), 12))]
    assert [start.day for start in starts] == [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    assert [start.month for start in starts] == list(range(1, 13))


def test_a_month_anchor_keeps_its_time_of_day() -> None:
    period = monthly("2026-01-15T09:45:30+02:00")  # 07:45:30 UTC
    assert period.anchor == utc(2026, 1, 15, 7, 45, 30)
    assert period.window_at(utc(2026, 3, 15, 7, 45, 29)) == window(
        utc(2026, 2, 15, 7, 45, 30), utc(2026, 3, 15, 7, 45, 30)
    )
    assert period.window_at(utc(2026, 3, 15, 7, 45, 30)).start == utc(2026, 3, 15, 7, 45, 30)


def test_calendar_days_start_at_midnight_utc() -> None:
    assert DAY.window_at(utc(2026, 11, 27, 23, 59, 59)) == window(utc(2026, 11, 27), utc(2026, 11, 28))
    assert DAY.window_at(utc(2026, 12, 31, 12)).end == utc(2027, 1, 1)


def test_days_anchored_at_half_past_six_run_from_half_past_six() -> None:
    period = parse_period("day", "2026-01-15T06:30:00Z")
    assert period.window_at(utc(2026, 11, 27, 6, 29, 59)) == window(utc(2026, 11, 26, 6, 30), utc(2026, 11, 27, 6, 30))
    assert period.window_at(utc(2026, 11, 27, 6, 30)) == window(utc(2026, 11, 27, 6, 30), utc(2026, 11, 28, 6, 30))
    # Before the anchor as after it.
    assert period.window_at(utc(2025, 3, 1, 0, 0)) == window(utc(2025, 2, 28, 6, 30), utc(2025, 3, 1, 6, 30))


def test_an_instant_at_a_boundary_belongs_to_the_window_it_starts() -> None:
    for period, boundary in [
        (DAY, utc(2026, 11, 28)),
        (MONTH, utc(2026, 12, 1)),
        (monthly("2026-01-31T00:00:00Z"), utc(2027, 2, 28)),
        (parse_period("day", "2026-01-15T06:30:00Z"), utc(2026, 11, 27, 6, 30)),
    ]:
        at = period.window_at(boundary)
        assert at.start == boundary
        assert at.contains(boundary)
        before = period.window_at(boundary - SECOND)
        assert before.end == boundary
        assert not before.contains(boundary)
        assert before.contains(boundary - SECOND)
        assert period.window_at(boundary - timedelta(microseconds=1)) == before


def test_instants_in_other_zones_are_read_in_utc() -> None:
    tokyo = timezone(timedelta(hours=9))
    # 08:59 on Dec 1st in Tokyo is still November in UTC.
    assert MONTH.window_at(datetime(2026, 12, 1, 8, 59, tzinfo=tokyo)).start == utc(2026, 11, 1)
    assert MONTH.window_at(datetime(2026, 12, 1, 9, 0, tzinfo=tokyo)).start == utc(2026, 12, 1)
    assert DAY.window_at(datetime(2026, 11, 27, 20, 0, tzinfo=timezone(timedelta(hours=-5)))).start == utc(2026, 11, 28)
    assert DAY.window_at(utc(2026, 11, 27)).contains(datetime(2026, 11, 27, 9, 0, tzinfo=tokyo))
    assert not DAY.window_at(utc(2026, 11, 27)).contains(datetime(2026, 11, 27, 8, 59, 59, tzinfo=tokyo))


def test_naive_instants_are_refused() -> None:
    naive = datetime(2026, 11, 27, 12)  # the refused input
    with pytest.raises(ValueError, match="aware"):
        DAY.window_at(naive)
    with pytest.raises(ValueError, match="aware"):
        DAY.window_at(utc(2026, 11, 27)).contains(naive)
    with pytest.raises(ValueError, match="aware"):
        format_instant(naive)
    with pytest.raises(ValueError, match="aware"):
        Period(PeriodKind.MONTH, naive)


def test_window_ids_are_the_start_to_the_second() -> None:
    assert DAY.window_at(utc(2026, 11, 27, 13)).id == "20261127T000000Z"
    period = parse_period("day", "2026-01-15T06:30:05Z")
    w = period.window_at(utc(2026, 11, 27, 13))
    assert w.id == "20261127T063005Z"
    assert period.window_with_id("20261127T063005Z") == w


@pytest.mark.parametrize(
    "window_id",
    [
        "20261127T000000Z",  # a day's start, not a month's
        "20261201T000001Z",  # a second after a start
        "20261201T000000",  # no Z
        "2026-12-01T00:00:00Z",  # an instant, not an id
        "20261301T000000Z",  # no 13th month
        "20260230T000000Z",  # no Feb 30
        "20261201T240000Z",
        "\u0662\u0660\u0662\u0666\u0661\u0662\u0660\u0661T000000Z",  # digits, but not ASCII ones
        "",
        "x" * 10_000,
    ],
)
def test_an_id_that_is_no_window_start_of_the_period_is_refused(window_id: str) -> None:
    with pytest.raises(ValueError, match="window"):
        MONTH.window_with_id(window_id)


def test_a_window_of_another_period_is_refused_by_following_and_preceding() -> None:
    day = DAY.window_at(utc(2026, 11, 27))
    with pytest.raises(ValueError, match="not a window of this period"):
        MONTH.following(day)
    with pytest.raises(ValueError, match="not a window of this period"):
        MONTH.preceding(day)


def test_last_lists_the_current_window_then_those_before_it() -> None:
    assert MONTH.last(utc(2026, 2, 10), 3) == [
        window(utc(2026, 2, 1), utc(2026, 3, 1)),
        window(utc(2026, 1, 1), utc(2026, 2, 1)),
        window(utc(2025, 12, 1), utc(2026, 1, 1)),
    ]
    assert MONTH.last(utc(2026, 2, 10), 0) == []
    with pytest.raises(ValueError, match="count"):
        MONTH.last(utc(2026, 2, 10), -1)


def test_to_json_names_the_kind_and_the_anchor_when_there_is_one() -> None:
    assert DAY.to_json() == {"period": "day"}
    assert monthly("2026-01-15T00:00:00+00:00").to_json() == {"period": "month", "anchor": "2026-01-15T00:00:00Z"}
    assert monthly("2026-01-15T01:00:00+01:00").to_json() == {"period": "month", "anchor": "2026-01-15T00:00:00Z"}


def test_format_instant_writes_utc_to_the_second() -> None:
    assert format_instant(utc(2026, 11, 27)) == "2026-11-27T00:00:00Z"
    assert format_instant(datetime(2026, 11, 27, 1, 2, 3, 999_999, tzinfo=timezone(timedelta(hours=1)))) == (
        "2026-11-27T00:02:03Z"
    )


@pytest.mark.parametrize(
    ("anchor", "expected"),
    [
        ("2026-01-15T00:00:00Z", utc(2026, 1, 15)),
        ("2026-01-15t00:00:00z", utc(2026, 1, 15)),
        ("2026-01-15T00:00:00+00:00", utc(2026, 1, 15)),
        ("2026-01-15T00:00:00-00:00", utc(2026, 1, 15)),
        ("2026-01-15T05:30:00+05:30", utc(2026, 1, 15)),
        ("2026-01-14T19:00:00-05:00", utc(2026, 1, 15)),
        ("2000-01-01T00:00:00Z", utc(2000, 1, 1)),
        ("2999-12-31T23:59:59Z", utc(2999, 12, 31, 23, 59, 59)),
        ("2000-01-01T00:00:00-01:00", utc(2000, 1, 1, 1)),
    ],
)
def test_an_anchor_is_read_as_rfc3339_in_any_offset_and_kept_in_utc(anchor: str, expected: datetime) -> None:
    period = parse_period("month", anchor)
    assert period.anchor == expected
    assert period.anchor.tzinfo is UTC


@pytest.mark.parametrize(
    ("kind", "anchor", "message"),
    [
        ("week", None, "period must be 'day' or 'month', not 'week'"),
        ("Day", None, "period must be 'day' or 'month'"),
        ("", None, "period must be 'day' or 'month'"),
        ("y" * 10_000, None, "period must be 'day' or 'month'"),
        ("month", "2026-01-15T00:00:00.5Z", "no fractional seconds"),
        ("month", "2026-01-15T00:00:00.000Z", "no fractional seconds"),
        ("month", "2026-01-15T00:00:00", "RFC 3339"),  # naive: no offset
        ("month", "2026-01-15", "RFC 3339"),
        ("month", "2026-01-15 00:00:00Z", "RFC 3339"),
        ("month", "1768435200", "RFC 3339"),
        ("month", "", "RFC 3339"),
        ("month", "2026-01-15T00:00:00+0100", "RFC 3339"),
        ("month", "2026-02-30T00:00:00Z", "not a valid date"),
        ("month", "2026-01-15T24:00:00Z", "not a valid date"),
        ("month", "2026-12-31T23:59:60Z", "not a valid date"),  # a leap second
        ("month", "2026-01-15T00:00:00+24:00", "no such UTC offset"),
        ("month", "2026-01-15T00:00:00+01:60", "no such UTC offset"),
        ("month", "1999-12-31T23:59:59Z", "from 2000-01-01T00:00:00Z to 2999-12-31T23:59:59Z"),
        ("month", "3000-01-01T00:00:00Z", "from 2000"),
        ("day", "2000-01-01T00:30:00+01:00", "from 2000"),  # 1999 in UTC
        ("day", "2999-12-31T23:30:00-01:00", "from 2000"),  # 3000 in UTC
        ("day", "0001-01-01T00:00:00+01:00", "from 2000"),  # before datetime's range in UTC
        ("day", "9999-12-31T23:59:59-01:00", "from 2000"),  # after it
    ],
)
def test_a_period_that_cannot_be_read_is_refused_with_a_message(kind: str, anchor: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=message) as refused:
        parse_period(kind, anchor)
    assert len(str(refused.value)) < 200  # a refused value is not echoed in full


@pytest.mark.parametrize("value", [None, 7, ["day"], {"day": 1}])
def test_values_that_are_not_strings_are_refused_with_a_value_error(value: object) -> None:
    with pytest.raises(ValueError, match="period must be"):
        parse_period(value, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="window id"):
        DAY.window_with_id(value)  # type: ignore[arg-type]
    if value is not None:
        with pytest.raises(ValueError, match="RFC 3339"):
            parse_period("day", value)  # type: ignore[arg-type]


def test_an_anchor_given_directly_must_be_a_whole_second_and_is_kept_in_utc() -> None:
    with pytest.raises(ValueError, match="no fractional seconds"):
        Period(PeriodKind.DAY, utc(2026, 1, 15).replace(microsecond=1))
    period = Period(PeriodKind.DAY, datetime(2026, 1, 15, 9, tzinfo=timezone(timedelta(hours=9))))
    assert period.anchor == utc(2026, 1, 15)
    assert period.anchor.tzinfo is UTC


def test_instants_beyond_what_a_datetime_holds_are_a_value_error() -> None:
    with pytest.raises(ValueError, match="out of range"):
        DAY.window_at(datetime(9999, 12, 31, 12, tzinfo=UTC))
    with pytest.raises(ValueError, match="out of range"):
        DAY.window_at(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
    with pytest.raises(ValueError, match="out of range"):
        MONTH.window_at(datetime(9999, 12, 31, 12, tzinfo=UTC))


# --- properties -------------------------------------------------------------------------------

# Hypothesis takes naive bounds, and draws in the zones given.
ANCHORS = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2999, 12, 31, 23, 59, 59),
    timezones=st.just(UTC),
).map(lambda anchor: anchor.replace(microsecond=0))
# Days 28 to 31 are where months differ: drawn often.
LATE_ANCHORS = st.builds(
    utc,
    year=st.integers(2000, 2999),
    month=st.sampled_from([1, 3, 5, 7, 8, 10, 12]),
    day=st.integers(28, 31),
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
    second=st.integers(0, 59),
)
PERIODS = st.builds(Period, kind=st.sampled_from(PeriodKind), anchor=st.none() | ANCHORS | LATE_ANCHORS)
ZONES = st.builds(timezone, st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23)))
INSTANTS = st.datetimes(
    min_value=datetime(2001, 1, 1),
    max_value=datetime(2998, 12, 31),
    timezones=ZONES,
)
FEW = settings(max_examples=150, deadline=None)


@FEW
@given(period=PERIODS, instant=INSTANTS)
def test_every_instant_is_in_exactly_one_window(period: Period, instant: datetime) -> None:
    w = period.window_at(instant)
    assert w.contains(instant)
    assert not period.preceding(w).contains(instant)
    assert not period.following(w).contains(instant)
    # Every instant of the window names it, its first and its last second alike.
    assert period.window_at(w.start) == w
    assert period.window_at(w.end - timedelta(microseconds=1)) == w


@FEW
@given(period=PERIODS, instant=INSTANTS)
def test_windows_follow_one_another_without_gap_or_overlap(period: Period, instant: datetime) -> None:
    w = period.window_at(instant)
    after = period.following(w)
    assert after.start == w.end
    assert period.preceding(after) == w
    assert period.following(period.preceding(w)) == w


@FEW
@given(period=PERIODS, instant=INSTANTS)
def test_days_are_86400_seconds_and_months_28_to_31_days(period: Period, instant: datetime) -> None:
    w = period.window_at(instant)
    length = w.end - w.start
    if period.kind is PeriodKind.DAY:
        assert length == timedelta(seconds=86_400)
    else:
        assert timedelta(days=28) <= length <= timedelta(days=31)
        assert length.seconds == 0  # whole days: every start is at the anchor's time of day


@FEW
@given(period=PERIODS, instant=INSTANTS)
def test_windows_start_at_the_anchors_time_on_its_day_or_the_months_last(period: Period, instant: datetime) -> None:
    anchor = period.anchor or utc(2000, 1, 1)
    start = period.window_at(instant).start
    assert start.time() == anchor.time()
    if period.kind is PeriodKind.MONTH:
        next_day = start + timedelta(days=1)
        assert start.day == anchor.day or (start.day < anchor.day and next_day.month != start.month)


@FEW
@given(period=PERIODS)
def test_the_anchor_starts_a_window(period: Period) -> None:
    if period.anchor is not None:
        assert period.window_at(period.anchor).start == period.anchor


@FEW
@given(period=PERIODS, first=INSTANTS, second=INSTANTS)
def test_ids_are_unique_and_sort_in_time_order(period: Period, first: datetime, second: datetime) -> None:
    a, b = sorted([period.window_at(first), period.window_at(second)], key=lambda w: w.start)
    assert (a.id == b.id) == (a == b)
    assert a.id <= b.id
    assert len(a.id) == len(b.id) == 16


@FEW
@given(period=PERIODS, instant=INSTANTS)
def test_an_id_names_its_window(period: Period, instant: datetime) -> None:
    w = period.window_at(instant)
    assert period.window_with_id(w.id) == w
    late = (w.start + SECOND).strftime("%Y%m%dT%H%M%SZ")
    with pytest.raises(ValueError, match="not the start"):
        period.window_with_id(late)


@FEW
@given(period=PERIODS, instant=INSTANTS, count=st.integers(1, 15))
def test_last_lists_count_contiguous_windows_newest_first(period: Period, instant: datetime, count: int) -> None:
    windows = period.last(instant, count)
    assert len(windows) == count
    assert windows[0] == period.window_at(instant)
    for newer, older in pairwise(windows):
        assert older.end == newer.start
        assert older.id < newer.id


@FEW
@given(period=PERIODS)
def test_a_period_reads_back_from_its_json(period: Period) -> None:
    body = period.to_json()
    assert parse_period(body["period"], body.get("anchor")) == period
