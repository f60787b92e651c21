"""The chaos run's own reads are made as a careful client makes them, so a run's verdicts are about
the system, never about a harness that gave up on an answer a real client would retry.

The reads are the product client's calls, one request each (local/product.py SINGLE_ATTEMPT); here
a script stands in for such a call, raising the errors the client raises for those answers."""

from __future__ import annotations

import pytest
from hybrid_counter_client.errors import HybridCounterError, error_for

from chaos.run import read_carefully


class ScriptedRead:
    """Answers each call with the next of its script: an error to raise, or the value read."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, HybridCounterError):
            raise answer
        return answer


def refusal(status: int, code: str) -> HybridCounterError:
    return error_for(status, code, "refused", "req-1", retry_after=0)


@pytest.mark.parametrize(
    "status",
    [
        500,  # API Gateway: the function's concurrency was used up
        502,  # API Gateway: the function crashed (chaos: crash_after_write on the rate lease's write)
        503,  # the function: DynamoDB failed after retries
        429,  # the tenant's or the stage's rate
    ],
)
def test_an_end_state_read_is_retried_after_a_transient_answer(status: int) -> None:
    read = ScriptedRead(refusal(status, "InternalError"), "the account")
    assert read_carefully(read, "GET /accounts/a") == "the account"
    assert read.calls == 2


def test_an_end_state_read_fails_at_once_on_an_answer_a_retry_would_not_change() -> None:
    read = ScriptedRead(refusal(404, "AccountNotFound"))
    with pytest.raises(AssertionError, match="AccountNotFound"):
        read_carefully(read, "GET /accounts/a")
    assert read.calls == 1
