"""clients/python as a user installs it: the wheel pip builds from the folder holds every module
and declares boto3 and botocore as its only dependencies, and the README's first lines and its
local form (`LimitsClient.local`, reading `.local/` as `make run` writes it) run from the installed
copy (not this source tree, nor the repository's `local` package) against a scripted server.

The full `python -m venv /tmp/x && /tmp/x/bin/pip install ./clients/python` (dependencies from
the package index, about 11 s here) is the manual check the client's README describes; this test
builds the wheel (about 2 s) and installs it without dependencies next to the project's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from local.identities import Identities
from tests.client.conftest import RESOURCE, Reply, ScriptedServer, account_reply, envelope
from tests.support.wheels import build_wheel

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"

FIRST_LINES = """
import boto3
from hybrid_counter_client import LimitExceeded, LimitsClient

session = boto3.Session(aws_access_key_id="AKID", aws_secret_access_key="s", region_name="us-east-1")
limits = LimitsClient(API_URL, session=session)
limits.put_account("acme", limit=1)
limits.create_resource("acme", "vm-1")
try:
    limits.create_resource("acme", "vm-2")
except LimitExceeded as error:
    print("refused", error.code, error.request_id)
import hybrid_counter_client
print(hybrid_counter_client.__file__)
"""


def readme_local_form() -> str:
    """The README's local form: the python block after its `local-form` marker."""
    readme = (CLIENT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- local-form", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert "LimitsClient.local(" in block
    return block


# The README's local form, from a folder below the one holding `.local/` (as `make run` leaves it),
# in a process where the repository's `local` package cannot be imported.
LOCAL_LINES = f"""
import os, sys
os.chdir("examples/projects")
{readme_local_form()}
print("local" in sys.modules)
"""


def test_the_wheel_installs_and_runs_the_readme_s_first_lines(server: ScriptedServer, tmp_path: Path) -> None:
    built = build_wheel(CLIENT, tmp_path, "hybrid_counter_client")
    wheel, names, metadata = built.path, built.names, built.metadata
    modules = {f"hybrid_counter_client/{path.name}" for path in (CLIENT / "src" / "hybrid_counter_client").iterdir()}
    assert modules - {"hybrid_counter_client/__pycache__"} <= names
    assert metadata["Name"] == "hybrid-counter-client"
    assert metadata["Requires-Python"] == ">=3.11"
    assert sorted(requirement.split(">")[0] for requirement in metadata.get_all("Requires-Dist")) == [
        "boto3",
        "botocore",
    ]

    installed = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(installed), str(wheel)],
        check=True,
    )
    server.answers(account_reply(), Reply(201, RESOURCE), envelope(409, "LimitExceeded", request_id="r-1"))
    server.answers(account_reply(), Reply(201, RESOURCE), account_reply())
    (tmp_path / "examples" / "projects").mkdir(parents=True)
    (tmp_path / ".local").mkdir()
    (tmp_path / ".local" / "endpoints.json").write_text(json.dumps({"apiUrl": server.url, "region": "us-east-1"}))
    Identities.load(tmp_path / ".local" / "identities.json")
    ran = subprocess.run(
        [sys.executable, "-c", f"API_URL = {server.url!r}\n{FIRST_LINES}\n{LOCAL_LINES}"],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    refused, location, created, account, imported_local = ran.stdout.splitlines()
    assert refused == "refused LimitExceeded r-1"
    assert location.startswith(str(installed))
    assert (created, imported_local) == ("created r-1", "False")
    assert account.startswith("Account(account_id='acme', limit=3")
    assert [request.method for request in server.received] == ["PUT", "POST", "POST", "PUT", "POST", "GET"]
    identities = Identities.load(tmp_path / ".local" / "identities.json")
    signers = [request.headers["x-amz-security-token"] for request in server.received[3:]]
    assert signers == [identities.admin.session_token] + [identities.tenant("acme").session_token] * 2
