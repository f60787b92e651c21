"""The Lambda package is built without Docker, for the Lambda runtime's platform."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from aws_cdk import aws_lambda as lambda_

from infra import bundling
from infra.synth import cdk_json_context

pytestmark = pytest.mark.infra


def flag_values(command: list[str], flag: str) -> list[str]:
    return [command[i + 1] for i, arg in enumerate(command) if arg == flag]


def test_pip_targets_the_lambda_python_and_architecture(tmp_path: Path) -> None:
    command = bundling.pip_install_command(Path("requirements.txt"), tmp_path)

    assert flag_values(command, "--python-version") == ["3.12"]
    assert flag_values(command, "--implementation") == ["cp"]
    assert "manylinux2014_aarch64" in flag_values(command, "--platform")
    assert all(p.endswith("_aarch64") for p in flag_values(command, "--platform"))
    assert "--only-binary=:all:" in command
    assert flag_values(command, "--target") == [str(tmp_path)]


def test_pip_target_follows_the_runtime_constants() -> None:
    assert bundling.wheel_python_version(lambda_.Runtime.PYTHON_3_13) == "3.13"
    assert bundling.wheel_platforms(lambda_.Architecture.X86_64)[0] == "manylinux2014_x86_64"


def test_non_python_runtime_is_rejected() -> None:
    with pytest.raises(ValueError, match="nodejs"):
        bundling.wheel_python_version(lambda_.Runtime.NODEJS_22_X)


@pytest.mark.slow
def test_synth_bundles_functions_with_linux_arm64_wheels(tmp_path: Path) -> None:
    """Runs the real bundler through CDK (the jsii callback included); needs PyPI."""
    import app as cdk_app

    started = time.monotonic()
    assembly = cdk_app.build_app(outdir=str(tmp_path), context=cdk_json_context()).synth()
    print(f"synth with bundling: {time.monotonic() - started:.1f} s")

    template = assembly.get_stack_by_name("HybridCounter").template
    (asset_key,) = {
        resource["Properties"]["Code"]["S3Key"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    package = tmp_path / f"asset.{asset_key.removesuffix('.zip')}"
    assert package.is_dir(), json.dumps(sorted(p.name for p in tmp_path.iterdir()))

    assert (package / "functions" / "__init__.py").is_file()
    assert (package / "functions" / "core" / "schema.py").is_file()
    assert not list((package / "functions").rglob("__pycache__"))
    assert not list((package / "functions").rglob("tests"))

    extensions = [p.name for p in package.rglob("*.so")]
    pydantic_core_extensions = [name for name in extensions if name.startswith("_pydantic_core")]
    assert pydantic_core_extensions, extensions
    assert all("cpython-312-aarch64-linux-gnu" in name for name in pydantic_core_extensions)
    assert not [name for name in extensions if "x86_64" in name]
    # Bytecode of the local interpreter would be dead weight for the runtime's Python.
    assert not list(package.rglob("*.cpython-311.pyc"))
