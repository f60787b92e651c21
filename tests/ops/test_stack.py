"""Where `python -m ops` points: the stack's outputs, the endpoint, and errors without tracebacks."""

from __future__ import annotations

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
from ops.__main__ import main
from ops.stack import EXIT_ERROR, Connection, MissingOutput, StackNotFound, StackOutputs
from tests.conftest import System
from tests.ops.conftest import create_output_stack


def test_the_outputs_name_the_table_the_queues_and_the_sweeper(system: System, connection: Connection) -> None:
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


def test_a_missing_output_is_named(system: System, connection: Connection) -> None:
    name = create_output_stack(connection, {OUTPUT_TABLE_NAME: "counter-table"})
    outputs = StackOutputs.resolve(connection, name)
    with pytest.raises(MissingOutput, match=f"stack {name} has no output {OUTPUT_DLQ2_URL}"):
        _ = outputs.dlq2_url


def test_a_missing_stack_is_an_error_without_a_traceback(
    system: System, emulator_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(StackNotFound):
        StackOutputs.resolve(Connection(emulator_url), "NoSuchStack")

    code = main(["account", "acme", "--endpoint-url", emulator_url, "--stack-name", "NoSuchStack"])
    err = capsys.readouterr().err
    assert code == EXIT_ERROR
    assert err.startswith(f"error: stack NoSuchStack not found in {emulator_url} (us-east-1)")
    assert "Traceback" not in err


def test_the_default_stack_name_is_the_deployed_one(
    system: System, emulator_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["--endpoint-url", emulator_url, "account", "acme"])
    assert f"stack {DEFAULT_STACK_NAME} not found" in capsys.readouterr().err


def test_an_emulator_needs_no_configured_credentials_or_region(
    system: System, emulator_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    connection = Connection(emulator_url)
    assert connection.region == "us-east-1"
    assert connection.client("dynamodb").describe_table(TableName=system.table)["Table"]["TableName"] == system.table
