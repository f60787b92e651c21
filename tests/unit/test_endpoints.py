"""`.local/endpoints.json`: how `make run` writes it (local/endpoints.py), read back by the client's
reader, the one every tool uses (how that finds the folder: tests/client/test_local.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hybrid_counter_client import LocalSystemError, local_endpoints

from local.endpoints import LOCAL_DIR_ENV, Endpoints, read_endpoints, remove_endpoints, write_endpoints

RUN = Endpoints("http://127.0.0.1:3000", "http://127.0.0.1:5000", "HybridCounter", "us-east-1", "/srv/logs")


@pytest.fixture(autouse=True)
def _no_named_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOCAL_DIR_ENV, raising=False)


def test_the_file_holds_the_agreed_keys(tmp_path: Path) -> None:
    path = write_endpoints(tmp_path / ".local", RUN)
    assert json.loads(path.read_text()) == {
        "apiUrl": "http://127.0.0.1:3000",
        "emulatorUrl": "http://127.0.0.1:5000",
        "stackName": "HybridCounter",
        "region": "us-east-1",
        "logDirectory": "/srv/logs",
    }
    path.write_text(json.dumps({**json.loads(path.read_text()), "later": "ignored"}))
    assert read_endpoints(tmp_path / ".local") == RUN


def test_the_client_reads_what_make_run_writes(tmp_path: Path) -> None:
    write_endpoints(tmp_path / ".local", RUN)
    found = local_endpoints(cwd=tmp_path)
    assert found.folder == tmp_path / ".local"
    assert (found.api_url, found.emulator_url, found.stack_name, found.region, found.log_directory) == (
        RUN.api_url,
        RUN.emulator_url,
        RUN.stack_name,
        RUN.region,
        RUN.log_directory,
    )


def test_the_tools_here_refuse_a_file_without_every_key(tmp_path: Path) -> None:
    """`python -m ops` needs the emulator and the stack, which the client reads as optional."""
    (tmp_path / ".local").mkdir()
    path = tmp_path / ".local" / "endpoints.json"
    path.write_text(json.dumps({"apiUrl": RUN.api_url, "region": RUN.region}))
    assert local_endpoints(tmp_path / ".local").emulator_url is None
    with pytest.raises(LocalSystemError, match="lacks emulatorUrl, stackName or logDirectory: start the system"):
        read_endpoints(tmp_path / ".local")
    path.write_text("{")
    with pytest.raises(LocalSystemError, match="is not what `make run` writes"):
        read_endpoints(tmp_path / ".local")


def test_a_stopping_run_removes_its_own_file_only(tmp_path: Path) -> None:
    local_dir = tmp_path / ".local"
    write_endpoints(local_dir, RUN)
    other = Endpoints("http://127.0.0.1:3100", "http://127.0.0.1:5100", "HybridCounter", "us-east-1", "/srv/other")
    write_endpoints(local_dir, other)  # a second `make run` (PORT=3100) started since
    remove_endpoints(local_dir, RUN)
    assert read_endpoints(local_dir) == other
    remove_endpoints(local_dir, other)
    assert not (local_dir / "endpoints.json").exists()
    remove_endpoints(local_dir, other)  # already gone: nothing to do
