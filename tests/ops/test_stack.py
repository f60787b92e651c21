"""Where `python -m ops` points: the stack's outputs, the endpoint, and errors without tracebacks."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra.outputs import (
    DEFAULT_STACK_NAME,
    OUTPUT_API_URL,
    OUTPUT_DLQ1_URL,
    OUTPUT_DLQ2_URL,
    OUTPUT_SWEEPER_FUNCTION,
    OUTPUT_TABLE_NAME,
)
from local.endpoints import LOCAL_DIR_ENV, Endpoints, write_endpoints
from ops.__main__ import main
from ops.stack import EXIT_ERROR, EXIT_NOT_FOUND, Connection, MissingOutput, StackNotFound, StackOutputs
from tests.conftest import Backend
from tests.ops.conftest import create_output_stack


def test_the_outputs_name_the_table_the_queues_and_the_sweeper(moto_backend: Backend, connection: Connection) -> None:
    name = create_output_stack(
        connection,
        {
            OUTPUT_TABLE_NAME: "counter-table",
            OUTPUT_DLQ1_URL: "http://queue/dlq1",
            OUTPUT_DLQ2_URL: "http://queue/dlq2",
            OUTPUT_SWEEPER_FUNCTION: "sweeper-function",
            OUTPUT_API_URL: "http://api/",
        },
    )
    outputs = StackOutputs.resolve(connection, name)
    assert (outputs.table_name, outputs.dlq1_url, outputs.dlq2_url, outputs.sweeper_function) == (
        "counter-table",
        "http://queue/dlq1",
        "http://queue/dlq2",
        "sweeper-function",
    )


def test_connections_in_one_process_parse_each_service_model_once(
    emulator_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command makes a Connection, and a session of its own once parsed the models of every
    service it used again (a tenth of a second of CPU per command; most of the ops tier's CPU
    when every test ran a command). A second connection's session has its own credentials and
    region, and parses nothing."""
    import botocore.loaders

    Connection(emulator_url, "us-east-1").client("dynamodb")
    parsed: list[str] = []
    load_file = botocore.loaders.JSONFileLoader.load_file

    def watched(self: botocore.loaders.JSONFileLoader, file_path: str) -> object:
        parsed.append(file_path)
        return load_file(self, file_path)

    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "load_file", watched)
    second = Connection(emulator_url, "eu-west-1")
    assert second.client("dynamodb").meta.region_name == "eu-west-1"
    assert parsed == []


def test_a_missing_output_is_named(moto_backend: Backend, connection: Connection) -> None:
    name = create_output_stack(connection, {OUTPUT_TABLE_NAME: "counter-table"})
    outputs = StackOutputs.resolve(connection, name)
    with pytest.raises(MissingOutput, match=f"stack {name} has no output {OUTPUT_DLQ2_URL}"):
        _ = outputs.dlq2_url


def test_a_missing_stack_is_an_error_without_a_traceback(
    moto_backend: Backend, emulator_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(StackNotFound):
        StackOutputs.resolve(Connection(emulator_url), "NoSuchStack")

    code = main(["account", "acme", "--endpoint-url", emulator_url, "--stack-name", "NoSuchStack"])
    err = capsys.readouterr().err
    assert code == EXIT_ERROR
    assert err.startswith(f"error: stack NoSuchStack not found in {emulator_url} (us-east-1)")
    assert "Traceback" not in err


def test_the_default_stack_name_is_the_deployed_one(
    moto_backend: Backend, emulator_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["--endpoint-url", emulator_url, "account", "acme"])
    assert f"stack {DEFAULT_STACK_NAME} not found" in capsys.readouterr().err


def test_an_emulator_needs_no_configured_credentials_or_region(
    moto_backend: Backend, emulator_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    connection = Connection(emulator_url)
    assert connection.region == "us-east-1"
    assert (
        connection.client("dynamodb").describe_table(TableName=moto_backend.table)["Table"]["TableName"]
        == moto_backend.table
    )


# -- a running `make run`, found from its .local/endpoints.json (local/endpoints.py) -------------


@dataclass(frozen=True)
class RepositoryShell:
    """A shell in a folder of the repository (`root/examples`) with no endpoint in its environment:
    what a developer has while `make run` serves, once `running` has written its endpoints file."""

    root: Path
    monkeypatch: pytest.MonkeyPatch
    capsys: pytest.CaptureFixture[str]

    def running(self, emulator_url: str, stack_name: str) -> Path:
        """A `.local/endpoints.json` as `make run` writes it, in the parent of the current folder."""
        endpoints = Endpoints("http://127.0.0.1:1", emulator_url, stack_name, "us-east-1", str(self.root))
        write_endpoints(self.root / ".local", endpoints)
        return self.root / ".local"

    def err(self) -> str:
        return self.capsys.readouterr().err


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> RepositoryShell:
    (tmp_path / "examples").mkdir()
    monkeypatch.chdir(tmp_path / "examples")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv(LOCAL_DIR_ENV, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")  # the run's region is the file's, not this one
    return RepositoryShell(tmp_path, monkeypatch, capsys)


def test_ops_finds_the_running_system_in_its_endpoints_file(
    moto_backend: Backend, emulator_url: str, stack: str, shell: RepositoryShell
) -> None:
    shell.running(emulator_url, stack)
    code = main(["account", "acme"])
    # The stack's table, found through the emulator, the stack name and the region of the file.
    assert (code, shell.err()) == (EXIT_NOT_FOUND, f"error: account acme not found in table {moto_backend.table}\n")


def test_an_endpoint_or_aws_given_overrides_the_endpoints_file(
    emulator_url: str, stack: str, shell: RepositoryShell
) -> None:
    shell.running(emulator_url, "NotThisStack")
    assert main(["account", "acme", "--stack-name", stack]) == EXIT_NOT_FOUND
    shell.err()
    shell.monkeypatch.setenv("AWS_ENDPOINT_URL", emulator_url)
    assert main(["account", "acme"]) == EXIT_ERROR  # the environment's endpoint, with the configured region
    assert f"stack HybridCounter not found in {emulator_url} (eu-west-1)" in shell.err()
    shell.monkeypatch.delenv("AWS_ENDPOINT_URL")
    assert main(["account", "acme", "--endpoint-url", emulator_url, "--region", "us-east-1"]) == EXIT_ERROR
    assert f"stack HybridCounter not found in {emulator_url} (us-east-1)" in shell.err()
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        shell.monkeypatch.delenv(name, raising=False)
    shell.monkeypatch.setenv("AWS_CONFIG_FILE", str(shell.root / "none"))
    assert main(["--aws", "account", "acme"]) == EXIT_ERROR  # AWS, which needs a region here
    assert "no AWS region configured" in shell.err()


def test_an_endpoints_file_nothing_answers_is_an_error_not_a_silent_fallback(shell: RepositoryShell) -> None:
    with socket.socket() as closed:  # a `make run` killed before it could remove its file
        closed.bind(("127.0.0.1", 0))
        dead_url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    local_dir = shell.running(dead_url, "HybridCounter")
    assert main(["account", "acme"]) == EXIT_ERROR
    err = shell.err()
    assert f"nothing answers at {dead_url}, which {local_dir / 'endpoints.json'} names" in err
    assert "start the system with `make run` first" in err
    assert "Traceback" not in err

    shell.monkeypatch.setenv(LOCAL_DIR_ENV, str(shell.root / "elsewhere"))  # named, and holding nothing
    assert main(["account", "acme"]) == EXIT_ERROR
    assert "start the system with `make run` first" in shell.err()
