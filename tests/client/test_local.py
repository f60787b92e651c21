"""`LimitsClient.local(...)` and its async twin: the system `make run` serves, found by its
`.local/endpoints.json` (/work's contract: apiUrl, region, ...) and signed with a session of
`.local/identities.json`, written here by the repository's own `local` package, as `make run` writes
them, so that a change of that format fails here. The client package itself never imports `local`
(test_packaging.py runs the installed wheel without it)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hybrid_counter_client import (
    AsyncLimitsClient,
    InvalidPathValue,
    LimitsClient,
    LocalSystemError,
    local_directory,
    local_endpoints,
)
from hybrid_counter_client.local_run import DIRECTORY_VARIABLE

from local.identities import Identities, mint_tenant
from tests.client.conftest import ACCOUNT, Reply, ScriptedServer, account_reply


def write_local(root: Path, server: ScriptedServer, region: str = "us-east-1", **extra: Any) -> Identities:
    """`root/.local` as `make run` leaves it: its endpoints, and its callers' sessions."""
    folder = root / ".local"
    folder.mkdir(parents=True, exist_ok=True)
    endpoints = {
        "apiUrl": server.url,
        "emulatorUrl": "http://127.0.0.1:1",
        "stackName": "HybridCounter",
        "region": region,
        "logDirectory": str(root / "logs"),
        **extra,
    }
    (folder / "endpoints.json").write_text(json.dumps(endpoints), encoding="utf-8")
    return Identities.load(folder / "identities.json")


def signer(server: ScriptedServer, index: int = -1) -> tuple[str, str, str]:
    """The access key, the credential scope's region and the session token a request was signed with."""
    headers = server.received[index].headers
    credential = headers["authorization"].split("Credential=", 1)[1].split(",", 1)[0]
    access_key, _, region, *_ = credential.split("/")
    return access_key, region, headers["x-amz-security-token"]


@pytest.fixture(autouse=True)
def no_directory_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DIRECTORY_VARIABLE, raising=False)


def test_a_tenant_and_the_admin_sign_with_their_sessions(server: ScriptedServer, tmp_path: Path) -> None:
    identities = write_local(tmp_path, server, region="eu-west-3", unknownKey=1)
    server.answers(account_reply(), account_reply())
    acme = LimitsClient.local("acme", directory=tmp_path / ".local")
    admin = LimitsClient.local(admin=True, directory=tmp_path / ".local")
    assert acme.get_account("acme").limit == ACCOUNT["limit"]
    assert admin.put_account("acme", limit=3).limit == ACCOUNT["limit"]
    tenant, boss = identities.tenant("acme"), identities.admin
    assert signer(server, 0) == (tenant.access_key_id, "eu-west-3", tenant.session_token)
    assert signer(server, 1) == (boss.access_key_id, "eu-west-3", boss.session_token)
    assert [request.path for request in server.received] == ["/prod/accounts/acme"] * 2


def test_found_from_any_folder_below_the_repository(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    identities = write_local(tmp_path, server)
    deep = tmp_path / "examples" / "projects"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    server.answers(account_reply())
    LimitsClient.local("acme").get_account("acme")
    assert signer(server)[0] == identities.tenant("acme").access_key_id


def test_the_environment_variable_comes_before_the_current_folder(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = write_local(tmp_path / "here", server)
    named = write_local(tmp_path / "named", server)
    monkeypatch.chdir(tmp_path / "here")
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(tmp_path / "named" / ".local"))
    server.answers(account_reply(), account_reply())
    LimitsClient.local(admin=True).get_account("acme")
    # The repository's folder names its .local as well.
    LimitsClient.local(admin=True, directory=tmp_path / "here").get_account("acme")
    assert signer(server, 0)[0] == named.admin.access_key_id != here.admin.access_key_id
    assert signer(server, 1)[0] == here.admin.access_key_id


def test_without_make_run_it_says_to_start_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LocalSystemError, match=r"no \.local/endpoints\.json in .*start the system with `make run`"):
        LimitsClient.local("acme")
    with pytest.raises(LocalSystemError, match=r"start the system with `make run` first"):
        AsyncLimitsClient.local(admin=True, directory=tmp_path)


def test_the_nearest_local_folder_holding_endpoints_is_found(server: ScriptedServer, tmp_path: Path) -> None:
    write_local(tmp_path, server)
    (tmp_path / "examples" / ".local").mkdir(parents=True)  # a .local without endpoints.json: passed over
    deep = tmp_path / "examples" / "projects"
    deep.mkdir()
    assert local_directory(cwd=deep) == tmp_path / ".local"
    found = local_endpoints(cwd=deep)
    assert (found.folder, found.api_url, found.emulator_url) == (tmp_path / ".local", server.url, "http://127.0.0.1:1")
    assert found.identities == tmp_path / ".local" / "identities.json"


def test_a_folder_named_without_endpoints_is_refused_saying_who_named_it(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_local(tmp_path / "here", server)
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(tmp_path / "empty"))
    named = re.escape(f"no endpoints.json in {tmp_path / 'empty'} ({DIRECTORY_VARIABLE}): start the system")
    with pytest.raises(LocalSystemError, match=named):
        local_directory(cwd=tmp_path / "here")
    given = re.escape(f"no endpoints.json in {tmp_path / 'given'}: start the system")
    with pytest.raises(LocalSystemError, match=given):
        local_directory(tmp_path / "given", cwd=tmp_path / "here")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{", "is not what `make run` writes"),
        ("[]", "is not what `make run` writes"),
        (json.dumps({"region": "us-east-1"}), "has no apiUrl"),
        (json.dumps({"apiUrl": "http://127.0.0.1:3000", "emulatorUrl": 5}), r"emulatorUrl is not a string"),
    ],
)
def test_a_file_make_run_did_not_write_is_refused(tmp_path: Path, content: str, said: str) -> None:
    (tmp_path / ".local").mkdir()
    (tmp_path / ".local" / "endpoints.json").write_text(content, encoding="utf-8")
    with pytest.raises(LocalSystemError, match=said):
        local_endpoints(cwd=tmp_path)
    with pytest.raises(LocalSystemError, match=said):
        LimitsClient.local(admin=True, directory=tmp_path)


def test_the_region_defaults_when_the_file_names_none(tmp_path: Path) -> None:
    (tmp_path / ".local").mkdir()
    (tmp_path / ".local" / "endpoints.json").write_text(json.dumps({"apiUrl": "http://127.0.0.1:3000"}))
    found = local_endpoints(tmp_path)
    assert (found.region, found.emulator_url, found.stack_name, found.log_directory) == ("us-east-1", None, None, None)


def test_endpoints_without_identities_say_to_start_it(server: ScriptedServer, tmp_path: Path) -> None:
    write_local(tmp_path, server)
    (tmp_path / ".local" / "identities.json").unlink()
    with pytest.raises(LocalSystemError, match=r"identities\.json: start the system with `make run` first"):
        LimitsClient.local(admin=True, directory=tmp_path)


def test_a_tenant_without_a_session_is_told_how_to_make_one(server: ScriptedServer, tmp_path: Path) -> None:
    write_local(tmp_path, server)
    with pytest.raises(LocalSystemError, match=r"no tenant session for 'globex'.*python -m local.identities globex"):
        LimitsClient.local("globex", directory=tmp_path)
    globex = mint_tenant("globex", tmp_path / ".local" / "identities.json")
    server.answers(account_reply())
    LimitsClient.local("globex", directory=tmp_path).get_account("globex")
    assert signer(server)[0] == globex.access_key_id


def test_keys_renewed_by_a_restart_are_used_without_a_new_client(server: ScriptedServer, tmp_path: Path) -> None:
    before = write_local(tmp_path, server).tenant("acme")
    acme = LimitsClient.local("acme", directory=tmp_path)
    renewed = Identities()  # a restart that minted them anew, saved as `make run` saves them
    after = renewed.tenant("acme")
    renewed.save(tmp_path / ".local" / "identities.json")
    assert after.access_key_id != before.access_key_id
    server.answers(account_reply())
    acme.get_account("acme")
    assert signer(server)[0] == after.access_key_id


def test_the_caller_is_a_tenant_or_the_admin(server: ScriptedServer, tmp_path: Path) -> None:
    write_local(tmp_path, server)
    with pytest.raises(TypeError, match="admin=True"):
        LimitsClient.local(directory=tmp_path)
    with pytest.raises(TypeError, match="not both"):
        LimitsClient.local("acme", admin=True, directory=tmp_path)
    with pytest.raises(InvalidPathValue, match=r"account_id='\.\.'"):
        LimitsClient.local("..", directory=tmp_path)


def test_the_async_twin(server: ScriptedServer, tmp_path: Path) -> None:
    identities = write_local(tmp_path, server)
    server.answers(account_reply(), Reply(200, {"items": [], "nextCursor": None}))

    async def calls() -> None:
        async with AsyncLimitsClient.local("acme", directory=tmp_path) as acme:
            await acme.get_account("acme")
        async with AsyncLimitsClient.local(admin=True, directory=tmp_path) as admin:
            await admin.list_resources_page("acme")

    asyncio.run(calls())
    assert signer(server, 0)[0] == identities.tenant("acme").access_key_id
    assert signer(server, 1)[0] == identities.admin.access_key_id
