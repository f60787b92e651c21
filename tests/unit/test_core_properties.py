"""Properties of the pure core over generated inputs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from functions.core.counting import (
    CONDITIONAL_CHECK_FAILED,
    ActionKind,
    CancellationReason,
    Outcome,
    ResourceState,
    decide_action,
)

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
