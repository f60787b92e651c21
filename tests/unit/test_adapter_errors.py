"""Which failures the adapters retry: only those that prove a non-idempotent write did not land."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

from functions.adapters.errors import call_at_most_once, may_have_landed
from functions.core.errors import StoreUnavailable
from functions.shared.config import ConfigurationError, Settings


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "UpdateItem"
    )


class Flaky:
    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


@pytest.mark.parametrize(
    "error",
    [
        client_error("ThrottlingException", 400),
        client_error("ProvisionedThroughputExceededException", 400),
        ConnectTimeoutError(endpoint_url="x"),
    ],
)
def test_failures_that_prove_nothing_landed_are_retried(error: Exception) -> None:
    call = Flaky(error)
    assert call_at_most_once("op", call, sleep=lambda _: None) == "ok"
    assert call.calls == 2


@pytest.mark.parametrize(
    ("error", "landed"),
    [
        (client_error("InternalServerError", 500), True),
        (ReadTimeoutError(endpoint_url="x"), True),
        (client_error("ValidationException", 400), False),
    ],
)
def test_other_failures_are_not_retried(error: Exception, landed: bool) -> None:
    call = Flaky(error)
    with pytest.raises(StoreUnavailable) as raised:
        call_at_most_once("op", call, sleep=lambda _: None)
    assert call.calls == 1
    assert raised.value.may_have_landed is landed
    assert may_have_landed(error) is landed


def test_persistent_throttling_gives_up_saying_nothing_landed() -> None:
    call = Flaky(*[client_error("ThrottlingException", 400)] * 10)
    with pytest.raises(StoreUnavailable) as raised:
        call_at_most_once("op", call, attempts=3, sleep=lambda _: None)
    assert call.calls == 3
    assert raised.value.may_have_landed is False


def test_settings_name_the_missing_variable() -> None:
    with pytest.raises(ConfigurationError, match="TABLE_NAME"):
        Settings.from_env({})
    assert Settings.from_env({"TABLE_NAME": "t"}).table_name == "t"
