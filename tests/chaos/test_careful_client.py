"""The chaos run's own client reads as a careful client does, so a run's verdicts are about the
system, never about a harness that gave up on an answer a real client would retry."""

from __future__ import annotations

from typing import Any

import pytest

from chaos.run import read_account
from local.http_client import Reply


class ScriptedApi:
    """Answers GETs from a script, one reply per call."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.calls = 0

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
        self.calls += 1
        return self.replies.pop(0)


GATEWAY_500 = {"error": {"code": "InternalError", "message": "Internal server error"}}


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
    account = {"accountId": "a", "limit": 3}
    api = ScriptedApi(Reply(status, {"Retry-After": "0"}, GATEWAY_500), Reply(200, {}, account))
    assert read_account(api, "/accounts/a") == account  # type: ignore[arg-type]
    assert api.calls == 2


def test_an_end_state_read_fails_at_once_on_an_answer_a_retry_would_not_change() -> None:
    api = ScriptedApi(Reply(404, {}, {"error": {"code": "AccountNotFound"}}))
    with pytest.raises(AssertionError, match="AccountNotFound"):
        read_account(api, "/accounts/a")  # type: ignore[arg-type]
    assert api.calls == 1
