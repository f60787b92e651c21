"""The construct as a user installs it (docs/construct.md, "Installing"): the wheel pip builds from
the repository root holds infra/ and the functions/ it bundles, their requirements.txt included, and
nothing of the app's tools; a user's CDK app that imports the installed copy (not this source tree)
synthesizes a counter whose Lambda package is bundled from the installed functions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.wheels import build_wheel

REPO_ROOT = Path(__file__).resolve().parents[2]

# A user's app.py: the counter, a function of theirs granted tenant access, synthesized with the
# bundler's pip replaced by one that records its command (no network) and succeeds.
USER_APP = """
import json, subprocess, sys
import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
import infra
from infra.hybrid_counter import HybridCounter, HybridCounterProps

commands = []

def pip(command):
    commands.append(command)
    return subprocess.CompletedProcess(command, 0, "", "")

app = cdk.App(outdir=sys.argv[1])
stack = cdk.Stack(app, "Saas")
limits = HybridCounter(stack, "Limits", HybridCounterProps(alarm_email="ops@example.com"), pip=pip)
backend = lambda_.Function(
    stack, "Backend", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context): return None"),
)
limits.grant_tenant_access(backend)
cdk.CfnOutput(stack, "LimitsApiUrl", value=limits.api_url)
template = app.synth().get_stack_by_name("Saas").template
print(json.dumps({"infra": infra.__file__, "pip": commands, "template": template}))
"""


@pytest.mark.slow
def test_the_wheel_carries_the_construct_and_the_functions_it_bundles(tmp_path: Path) -> None:
    built = build_wheel(REPO_ROOT, tmp_path, "hybrid_counter")
    wheel, names, metadata = built.path, built.names, built.metadata
    sources = {
        path.relative_to(REPO_ROOT).as_posix()
        for folder in ("infra", "functions")
        for path in (REPO_ROOT / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert "functions/requirements.txt" in sources
    assert sources <= names
    assert {name.split("/")[0] for name in names} == {"infra", "functions", wheel.name.rsplit("-", 3)[0] + ".dist-info"}
    assert sorted(re.split("[<>=]", requirement)[0] for requirement in metadata.get_all("Requires-Dist") or []) == [
        "aws-cdk-lib",
        "constructs",
        "pydantic",
    ]

    installed = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(installed), str(wheel)],
        check=True,
    )
    app_dir = tmp_path / "user-app"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(USER_APP, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "app.py", str(tmp_path / "cdk.out")],
        capture_output=True,
        text=True,
        check=False,
        # The installed copy first; the venv's own site-packages (aws-cdk-lib) stay on the path.
        env={
            "PYTHONPATH": str(installed),
            "PATH": "/usr/bin:/bin",
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        },
        cwd=app_dir,
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["infra"].startswith(str(installed))
    [command] = result["pip"]  # the functions' requirements, from the installed copy
    assert command[command.index("--requirement") + 1] == str(installed / "functions" / "requirements.txt")
    functions = [r for r in result["template"]["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert len(functions) == 10  # the counter's nine and the user's own
    # The package the counter's functions run: the installed functions/, bundled.
    [asset] = {
        f["Properties"]["Code"]["S3Key"].removesuffix(".zip") for f in functions if "S3Key" in f["Properties"]["Code"]
    }
    bundled = tmp_path / "cdk.out" / f"asset.{asset}"
    assert (bundled / "functions" / "api" / "handler.py").read_bytes() == (
        REPO_ROOT / "functions" / "api" / "handler.py"
    ).read_bytes()
