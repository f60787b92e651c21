"""Properties of the pure core over generated inputs."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from functions.core import schema
from functions.core.counting import (
    CONDITIONAL_CHECK_FAILED,
    ActionKind,
    CancellationReason,
    Outcome,
    ResourceState,
    decide_action,
    plan_stream_record,
)
from local.filters import matches_any

CODES = st.sampled_from(
    [
        "None",
        CONDITIONAL_CHECK_FAILED,
        "TransactionConflict",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "ValidationError",
    ]
)
STATES = st.none() | st.builds(
    ResourceState, exists=st.booleans(), deleted=st.booleans(), counter_processed=st.booleans()
)


@st.composite
def stream_records(draw: Any) -> dict[str, Any]:
    sort_key = draw(st.sampled_from(["ACCOUNT", "COUNTER", "RESOURCE#r1", "RESOURCE#", "OTHER#x"]))
    image = {
        name: {"BOOL": value}
        for name, value in (
            ("counter_processed", draw(st.none() | st.booleans())),
            ("deleted", draw(st.none() | st.booleans())),
        )
        if value is not None
    }
    record: dict[str, Any] = {
        "eventName": draw(st.sampled_from(["INSERT", "MODIFY", "REMOVE"])),
        "dynamodb": {"Keys": {"pk": {"S": "ACCOUNT#a"}, "sk": {"S": sort_key}}, "SequenceNumber": "1"},
    }
    if draw(st.booleans()):
        record["dynamodb"]["NewImage"] = image
    return record


@given(stream_records())
def test_the_core_selects_exactly_what_the_event_source_filter_delivers(record: dict[str, Any]) -> None:
    """Redriven ranges bypass the filter: the core must apply the same selection by itself."""
    planned = plan_stream_record(record) is not None
    filtered_in = matches_any(schema.STREAM_FILTER_PATTERNS, record)
    # An empty resource id ("RESOURCE#") passes the filter's prefix rule but names no resource.
    if record["dynamodb"]["Keys"]["sk"]["S"] == schema.RESOURCE_PREFIX:
        assert not planned
    else:
        assert planned == filtered_in


@given(kind=st.sampled_from(list(ActionKind)), code=CODES, state=STATES)
def test_only_an_actions_own_condition_failure_counts_as_done(
    kind: ActionKind, code: str, state: ResourceState | None
) -> None:
    step = decide_action(kind, CancellationReason(code, state))
    assert step is not Outcome.APPLIED  # only a commit applies anything
    if code == "None":
        assert step is None  # not the cause: sent again
    elif code != CONDITIONAL_CHECK_FAILED:
        assert step is Outcome.RETRY
    else:
        assert step is not None
