"""The README's local commands work as written: every fenced `sh` block marked `<!-- runs-locally -->`
(in README.md and docs/api.md), and every such `python` block as one command of the project's
interpreter, is run in one shell, in order, from the repository's root, against
the running system as `make run` leaves it (its .local/ folder: endpoints.json, identities.json),
and each command answers what its comment says: a curl command's comment starts with its HTTP
status (`# 201`, or `# 201 or 200` where running the block again answers otherwise), any other
command exits 0.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra.layout import REPO_ROOT
from local.endpoints import LOCAL_DIR_ENV
from tests.integration.conftest import RunningSystem

MARK = "<!-- runs-locally -->"
DOCUMENTS = ("README.md", "docs/api.md")
# A curl command's comment starts with its status, or the statuses it may answer.
STATUSES = re.compile(r"\s*(?P<statuses>\d{3}(?: or \d{3})*)\b")


def split_comment(line: str) -> tuple[str, str]:
    """The command and its comment, as the shell splits them: a `#` that starts a word outside quotes."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index], line[index + 1 :]
    return line, ""


@dataclass(frozen=True)
class Command:
    where: str  # file:line
    text: str
    statuses: frozenset[int]  # what a curl command may answer; empty for another command

    @property
    def is_curl(self) -> bool:
        return re.search(r"(^|[\s(|])curl\s", split_comment(self.text)[0]) is not None


def marked_commands(document: str) -> list[Command]:
    """The commands of the document's marked blocks, continuation lines joined, comment lines skipped."""
    lines = (REPO_ROOT / document).read_text(encoding="utf-8").splitlines()
    found: list[Command] = []
    for number, line in enumerate(lines):
        if line.strip() != MARK:
            continue
        fence = lines[number + 1].strip()
        assert fence in ("```sh", "```python"), f"{document}:{number + 2}: {MARK} must precede a sh or python block"
        if fence == "```python":
            # A Python block is one command: the project's interpreter runs it whole, and it exits 0.
            end = lines.index("```", number + 2)
            code = "\n".join(lines[number + 2 : end])
            command = f".venv/bin/python - <<'PYTHON'\n{code}\nPYTHON"
            found.append(Command(f"{document}:{number + 3}", command, frozenset()))
            continue
        pending, start = "", 0
        for offset, text in enumerate(lines[number + 2 :], start=number + 3):
            if text.strip() == "```":
                break
            if not pending:
                start = offset
            if text.rstrip().endswith("\\"):
                pending += text.rstrip()[:-1] + " "
                continue
            whole, pending = pending + text, ""
            if not whole.strip() or whole.lstrip().startswith("#"):
                continue
            statuses = STATUSES.match(split_comment(whole)[1])
            found.append(
                Command(
                    f"{document}:{start}",
                    whole,
                    frozenset(int(s) for s in statuses.group("statuses").split(" or ")) if statuses else frozenset(),
                )
            )
    return found


# Each curl's status goes to a record (fd 3) while its body goes where the command sends it.
PRELUDE = r"""
exec 3>>"$RECORD"
curl() {
    local answer status
    answer=$(mktemp)
    command curl --silent --show-error --write-out '\n%{http_code}' "$@" > "$answer"
    status=$(tail -n 1 "$answer")
    sed '$d' "$answer"
    rm -f "$answer"
    echo "status $status" >&3
}
"""


def script(commands: list[Command]) -> str:
    steps = [
        f'echo "command {index}" >&3\n{command.text}\necho "exit $?" >&3' for index, command in enumerate(commands)
    ]
    return PRELUDE + "\n".join(steps) + "\n"


def answers(record: str) -> dict[int, tuple[list[int], int]]:
    """Per command: the statuses its curl calls got, and its exit status."""
    seen: dict[int, tuple[list[int], int]] = {}
    current = -1
    for line in record.splitlines():
        kind, _, value = line.partition(" ")
        if kind == "command":
            current = int(value)
            seen[current] = ([], -1)
        elif kind == "status":
            seen[current][0].append(int(value))
        elif kind == "exit":
            seen[current] = (seen[current][0], int(value))
    return seen


def test_every_marked_curl_command_states_its_answer() -> None:
    commands = [command for document in DOCUMENTS for command in marked_commands(document)]
    assert len(commands) > 20
    unstated = [command.where for command in commands if command.is_curl and not command.statuses]
    assert unstated == [], "a curl command's comment must start with the status it answers"


def test_the_readme_local_commands_answer_as_written(running_system: RunningSystem, local_runtime: object) -> None:
    """One shell over every marked block, in the documents' order, as a newcomer types them."""
    assert running_system.local_dir is not None
    commands = [command for document in DOCUMENTS for command in marked_commands(document)]
    with tempfile.NamedTemporaryFile("r", suffix=".record") as record:
        environment = {
            **os.environ,
            LOCAL_DIR_ENV: str(running_system.local_dir),
            "RECORD": record.name,
            # This checkout's client too, as the tests import it (pyproject.toml's pythonpath): the
            # commands' tools (`python -m ops`, `local.identities`) read .local/ with it.
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "clients" / "python" / "src")]),
        }
        environment.pop("AWS_ENDPOINT_URL", None)  # ops finds the system in the .local folder, as after `make run`
        done = subprocess.run(
            ["bash", "-c", script(commands)],
            cwd=REPO_ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
        got = answers(Path(record.name).read_text(encoding="utf-8"))
    failures = []
    for index, command in enumerate(commands):
        statuses, exit_status = got.get(index, ([], -1))
        if command.is_curl:
            ok = bool(statuses) and all(status in command.statuses for status in statuses)
            expected = " or ".join(str(status) for status in sorted(command.statuses))
        else:
            ok, expected = exit_status == 0, "exit 0"
        if not ok:
            failures.append(
                f"{command.where}: {command.text.strip()}\n  expected {expected}, got {statuses} exit {exit_status}"
            )
    if failures:
        pytest.fail("\n".join([*failures, "--- stdout", done.stdout[-4000:], "--- stderr", done.stderr[-4000:]]))
