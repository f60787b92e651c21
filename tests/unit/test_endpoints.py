"""`.local/endpoints.json`: how `make run` writes it and how a reader finds it (local/endpoints.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from local.endpoints import (
    LOCAL_DIR_ENV,
    Endpoints,
    NotRunning,
    find_local_dir,
    read_endpoints,
    remove_endpoints,
    write_endpoints,
)

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


def test_a_reader_finds_the_nearest_local_folder_holding_endpoints(tmp_path: Path) -> None:
    write_endpoints(tmp_path / ".local", RUN)
    (tmp_path / "examples" / ".local").mkdir(parents=True)  # a .local without endpoints.json: passed over
    deep = tmp_path / "examples" / "projects"
    deep.mkdir()
    assert find_local_dir(cwd=deep) == tmp_path / ".local"


def test_an_argument_then_the_environment_name_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_endpoints(tmp_path / "here" / ".local", RUN)
    write_endpoints(tmp_path / "named", RUN)
    write_endpoints(tmp_path / "given", RUN)
    monkeypatch.setenv(LOCAL_DIR_ENV, str(tmp_path / "named"))
    assert find_local_dir(cwd=tmp_path / "here") == tmp_path / "named"
    assert find_local_dir(tmp_path / "given", cwd=tmp_path / "here") == tmp_path / "given"
    monkeypatch.setenv(LOCAL_DIR_ENV, str(tmp_path / "empty"))
    with pytest.raises(NotRunning, match=f"no endpoints.json in {tmp_path / 'empty'} \\({LOCAL_DIR_ENV}\\)"):
        find_local_dir(cwd=tmp_path / "here")


def test_without_a_running_system_a_reader_is_told_to_start_it(tmp_path: Path) -> None:
    with pytest.raises(NotRunning, match="start the system with `make run` first"):
        find_local_dir(cwd=tmp_path)
    (tmp_path / ".local").mkdir()
    (tmp_path / ".local" / "endpoints.json").write_text("{")
    with pytest.raises(NotRunning, match="unreadable"):
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
