"""The Makefile runs what the README says it runs (`make -n`: the commands, not run)."""

from __future__ import annotations

import shlex
import subprocess

from infra.layout import REPO_ROOT


def planned(*arguments: str) -> list[list[str]]:
    """The commands `make ARGUMENTS` would run, each split as the shell splits it."""
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", *arguments], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [shlex.split(line) for line in out.splitlines() if line.strip()]


def launcher(*arguments: str) -> list[str]:
    """The `python -m local` command `make run ARGUMENTS` would run."""
    [command] = [line for line in planned("run", *arguments) if line[1:3] == ["-m", "local"]]
    return command[3:]


def test_make_run_serves_on_port_3000_by_default() -> None:
    assert launcher() == ["--port", "3000"]


def test_make_run_takes_the_port_and_the_arguments_it_is_given() -> None:
    assert launcher("PORT=3100", "ARGS=--refusal-grace 5 -c streamBatchingWindowSeconds=2") == [
        "--port",
        "3100",
        "--refusal-grace",
        "5",
        "-c",
        "streamBatchingWindowSeconds=2",
    ]
