"""The Lambda package, proved on the runtime's own Python (3.12): built by the real bundler for
x86_64 (the machine this runs on), then every handler imported and run by a python3.12 with nothing
but the package on its path, as Lambda would. Its JWT verification's crypto backend signs and
verifies a token there. Needs PyPI and a Python 3.12 (pyenv's, on these machines)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from infra import bundling, options
from infra.synth import cdk_json_context

# pyenv's own interpreter first: its `python3.12` shim refuses to run unless 3.12 is selected.
PYTHON_312 = next((str(path) for path in sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))), None) or (
    shutil.which("python3.12")
)

# The package must run on the Lambda runtime's own Python; without one here, there is nothing to run it on.
NEEDS_PYTHON_312 = pytest.mark.skipif(
    PYTHON_312 is None,
    reason="no Python 3.12 (the Lambda runtime's) on this machine: `pyenv install 3.12`, or a python3.12 on PATH",
)

SMOKE = r"""
import json, os, sys
from functions.api.handler import handler as api
from functions.stream_consumer.handler import handler as consumer  # noqa: F401
from functions.redrive.handler import handler as redrive  # noqa: F401
from functions.sweeper.handler import handler as sweeper  # noqa: F401
from functions.authorizer.handler import handler as authorizer  # noqa: F401

class Context:
    function_name, memory_limit_in_mb, aws_request_id = "api", 256, "smoke"
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:api"

# An admin's PUT with a body the contract refuses: answered by the function alone, no AWS call.
event = {"httpMethod": "PUT", "path": "/accounts/acme", "resource": "/{proxy+}", "headers": {},
         "requestContext": {"requestId": "smoke", "resourcePath": "/{proxy+}", "httpMethod": "PUT"},
         "pathParameters": {"proxy": "accounts/acme"}, "body": json.dumps({"limit": -1}), "isBase64Encoded": False}
answer = api(event, Context())

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
token = jwt.encode({"sub": "u"}, key, algorithm="RS256")
claims = jwt.decode(token, key.public_key(), algorithms=["RS256"])
print(json.dumps({"python": sys.version_info[:2], "status": answer["statusCode"],
                  "code": json.loads(answer["body"])["error"]["code"], "jwt": claims["sub"]}))
"""


def build_and_smoke(tmp_path: Path, pip: bundling.PipRunner = bundling.run_pip) -> subprocess.CompletedProcess[str]:
    """Build the package as `cdk deploy` would (x86_64, this machine's), then run SMOKE on it."""
    import app as cdk_app

    context = {**cdk_json_context(), options.ARCHITECTURE.key: "x86_64"}
    assembly = cdk_app.build_app(pip, outdir=str(tmp_path), context=context).synth()
    template = assembly.get_stack_by_name("HybridCounter").template
    (asset_key,) = {
        resource["Properties"]["Code"]["S3Key"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    package = tmp_path / f"asset.{asset_key.removesuffix('.zip')}"
    assert bundling.wheel_python_version() == "3.12"

    environment = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(package),  # the package alone: nothing from this test's interpreter
        "PYTHONNOUSERSITE": "1",
        "TABLE_NAME": "smoke",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "smoke",
        "AWS_SECRET_ACCESS_KEY": "smoke",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "Smoke",
        "POWERTOOLS_SERVICE_NAME": "smoke",
    }
    return subprocess.run(
        [str(PYTHON_312), "-I", "-c", f"import sys; sys.path.insert(0, {str(package)!r})\n{SMOKE}"],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def without(distribution: str, workdir: Path) -> bundling.PipRunner:
    """The bundler's pip run on a copy of its requirements file without `distribution`'s line."""

    def run(command: list[str]) -> subprocess.CompletedProcess[str]:
        position = command.index("--requirement") + 1
        lines = Path(command[position]).read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if not line.lower().startswith(distribution.lower())]
        assert len(kept) == len(lines) - 1, f"{distribution} is not in the functions' requirements"
        trimmed = workdir / "requirements-without.txt"
        trimmed.write_text("\n".join(kept) + "\n", encoding="utf-8")
        return bundling.run_pip([*command[:position], str(trimmed), *command[position + 1 :]])

    return run


@pytest.mark.slow
@NEEDS_PYTHON_312
def test_the_package_runs_every_handler_on_python_312(tmp_path: Path) -> None:
    ran = build_and_smoke(tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert result == {"python": [3, 12], "status": 400, "code": "ValidationError", "jwt": "u"}


@pytest.mark.slow
@NEEDS_PYTHON_312
def test_the_package_fails_when_a_dependency_is_left_out_of_the_functions_requirements(tmp_path: Path) -> None:
    """The same build without PyJWT in functions/requirements.txt: the authorizer's import fails on
    3.12, so a dependency missing from the package fails here, not a deployment."""
    ran = build_and_smoke(tmp_path / "cdk.out", without("PyJWT", tmp_path))
    assert ran.returncode != 0
    assert "No module named 'jwt'" in ran.stderr
