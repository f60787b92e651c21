"""Every request is signed by botocore's SigV4 signer for execute-api with the session's
credentials as they are at that moment: an assumed role's, refreshed when they expire, are used
as soon as botocore has them."""

from __future__ import annotations

import datetime
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.credentials import CredentialProvider, CredentialResolver, RefreshableCredentials
from hybrid_counter_client import LimitsClient

from tests.client.conftest import REGION, ScriptedServer, Waits, account_reply, client_of, envelope, static_session

MINTED = datetime.datetime(2026, 11, 25, 9, 0, tzinfo=datetime.UTC)
LIFETIME = datetime.timedelta(hours=1)


class AssumedRole(CredentialProvider):  # type: ignore[misc]
    """Credentials as an assumed role's: each set expires after an hour, and botocore fetches the
    next (`refresh_using`) when it is near; `now` is the test's, not the wall clock."""

    METHOD = "assume-role"

    def __init__(self) -> None:
        super().__init__()
        self.now = MINTED
        self.issued = 0

    def fetch(self) -> dict[str, str]:
        self.issued += 1
        return {
            "access_key": f"ASIAROLE{self.issued}",
            "secret_key": f"secret-{self.issued}",
            "token": f"token-{self.issued}",
            "expiry_time": (self.now + LIFETIME).isoformat(),
        }

    def load(self) -> RefreshableCredentials:
        first = self.fetch()
        return RefreshableCredentials(
            first["access_key"],
            first["secret_key"],
            first["token"],
            datetime.datetime.fromisoformat(first["expiry_time"]),
            self.fetch,
            self.METHOD,
            time_fetcher=lambda: self.now,
        )


def assumed_role_session(role: AssumedRole) -> Any:
    core = botocore.session.Session()
    core.register_component("credential_provider", CredentialResolver([role]))
    return boto3.Session(botocore_session=core, region_name=REGION)


def signed_by(request: Any) -> tuple[str, str, str]:
    """(access key, region, service) of a request's SigV4 credential scope."""
    credential = request.headers["authorization"].split("Credential=")[1].split(",")[0]
    key, _, region, service, _ = credential.split("/")
    return key, region, service


def test_credentials_refreshed_between_calls_sign_the_next_call(server: ScriptedServer, waits: Waits) -> None:
    role = AssumedRole()
    server.answers(account_reply(), account_reply(), account_reply())
    client = client_of(server, waits, session=assumed_role_session(role))
    client.get_account("acme")
    role.now += datetime.timedelta(minutes=10)  # still fresh
    client.get_account("acme")
    role.now += LIFETIME  # expired: botocore fetches the next set
    client.get_account("acme")

    keys = [signed_by(request)[0] for request in server.received]
    tokens = [request.headers["x-amz-security-token"] for request in server.received]
    assert keys == ["ASIAROLE1", "ASIAROLE1", "ASIAROLE2"]
    assert tokens == ["token-1", "token-1", "token-2"]


def test_a_retry_is_signed_with_the_credentials_of_its_own_moment(server: ScriptedServer, waits: Waits) -> None:
    role = AssumedRole()

    def expire_while_waiting(seconds: float) -> None:
        waits.sleep(seconds)
        role.now += LIFETIME

    server.answers(envelope(503, "ServiceUnavailable", Retry_After="1"), account_reply())
    client = LimitsClient(
        server.url,
        assumed_role_session(role),
        clock=waits.clock,
        sleep=expire_while_waiting,
        random=lambda: 0.5,
    )
    client.get_account("acme")
    assert [signed_by(request)[0] for request in server.received] == ["ASIAROLE1", "ASIAROLE2"]


def test_requests_are_signed_for_execute_api_in_the_sessions_region_with_its_token(
    server: ScriptedServer, waits: Waits
) -> None:
    server.answers(account_reply())
    client_of(server, waits, session=static_session("AKIDSTATIC", token="t-1")).get_account("acme")
    request = server.received[0]
    assert signed_by(request) == ("AKIDSTATIC", REGION, "execute-api")
    assert request.headers["x-amz-security-token"] == "t-1"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 ")
    assert "x-amz-date" in request.headers


def test_the_region_can_be_given(server: ScriptedServer, waits: Waits) -> None:
    server.answers(account_reply())
    client = client_of(server, waits, region="ap-south-2")
    client.get_account("acme")
    assert client.region == "ap-south-2"
    assert signed_by(server.received[0])[1] == "ap-south-2"


def test_a_session_without_a_region_needs_one_given(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    session = boto3.Session(aws_access_key_id="k", aws_secret_access_key="s")
    with pytest.raises(ValueError, match="no region"):
        LimitsClient(server.url, session)
