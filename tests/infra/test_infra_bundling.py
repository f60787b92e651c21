"""The Lambda package is built without Docker, for the Lambda runtime's platform."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import aws_lambda as lambda_

from infra import bundling, options
from infra.outputs import DEFAULT_STACK_NAME
from infra.synth import cdk_json_context

pytestmark = pytest.mark.infra


def flag_values(command: list[str], flag: str) -> list[str]:
    return [command[i + 1] for i, arg in enumerate(command) if arg == flag]


ARM_64 = lambda_.Architecture.ARM_64
X86_64 = lambda_.Architecture.X86_64


def test_pip_targets_the_lambda_python_and_architecture(tmp_path: Path) -> None:
    command = bundling.pip_install_command(Path("requirements.txt"), tmp_path, ARM_64)

    assert flag_values(command, "--python-version") == ["3.12"]
    assert flag_values(command, "--implementation") == ["cp"]
    assert "manylinux2014_aarch64" in flag_values(command, "--platform")
    assert all(p.endswith("_aarch64") for p in flag_values(command, "--platform"))
    assert "--only-binary=:all:" in command
    assert flag_values(command, "--target") == [str(tmp_path)]


def test_pip_for_x86_64_asks_for_x86_64_wheels(tmp_path: Path) -> None:
    command = bundling.pip_install_command(Path("requirements.txt"), tmp_path, X86_64)

    assert flag_values(command, "--platform") == ["manylinux2014_x86_64", "manylinux_2_28_x86_64"]
    assert not [arg for arg in command if "aarch64" in arg]
    assert flag_values(command, "--python-version") == ["3.12"]
    assert "--only-binary=:all:" in command


def test_pip_target_follows_the_runtime_constants() -> None:
    assert bundling.wheel_python_version(lambda_.Runtime.PYTHON_3_13) == "3.13"
    assert bundling.wheel_platforms(X86_64) == ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
    assert bundling.wheel_platforms(ARM_64) == ("manylinux2014_aarch64", "manylinux_2_28_aarch64")


def test_unknown_architecture_has_no_wheel_platform() -> None:
    with pytest.raises(ValueError, match="riscv64"):
        bundling.wheel_platforms(lambda_.Architecture.custom("riscv64"))


def test_bundling_environment_records_the_target_platform() -> None:
    """The environment is part of the asset's bundling options, hence of its hash."""
    arm = bundling.bundling_environment(ARM_64)
    x86 = bundling.bundling_environment(X86_64)

    assert arm["TARGET_PLATFORMS"] == "manylinux2014_aarch64,manylinux_2_28_aarch64"
    assert x86["TARGET_PLATFORMS"] == "manylinux2014_x86_64,manylinux_2_28_x86_64"
    assert (arm["TARGET_ARCHITECTURE"], x86["TARGET_ARCHITECTURE"]) == ("arm64", "x86_64")
    assert arm["TARGET_PYTHON_VERSION"] == x86["TARGET_PYTHON_VERSION"] == "3.12"


def test_lambda_package_keeps_the_architecture_it_was_built_for() -> None:
    assert bundling.lambda_package(X86_64).architecture is X86_64


def lambda_functions(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]


class RecordedPip:
    """The bundler's pip run, given to the app (offline, instant): records each command."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def __call__(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        self.commands.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")


@pytest.fixture
def pip() -> RecordedPip:
    return RecordedPip()


def synth_with_bundling(outdir: Path, architecture: str, pip: RecordedPip) -> dict[str, Any]:
    import app as cdk_app

    context = {**cdk_json_context(), options.ARCHITECTURE.key: architecture}
    assembly = cdk_app.build_app(pip, outdir=str(outdir), context=context).synth()
    template: dict[str, Any] = assembly.get_stack_by_name(DEFAULT_STACK_NAME).template
    return template


@pytest.mark.parametrize("architecture", ["arm64", "x86_64"])
def test_synth_bundles_for_the_context_architecture(tmp_path: Path, pip: RecordedPip, architecture: str) -> None:
    """Real synth and bundler callback with pip recorded: the functions and the wheels agree."""
    template = synth_with_bundling(tmp_path, architecture, pip)

    machine = {"arm64": "aarch64", "x86_64": "x86_64"}[architecture]
    (command,) = pip.commands  # one shared package, bundled once
    assert flag_values(command, "--platform") == [f"manylinux2014_{machine}", f"manylinux_2_28_{machine}"]
    functions = lambda_functions(template)
    # api, stream consumer, redrive, sweeper, event publisher, refusal aggregator, emitter, plan pager, plan worker
    assert len(functions) == 9
    assert all(function["Architectures"] == [architecture] for function in functions)


def test_asset_hash_depends_on_the_architecture(tmp_path: Path, pip: RecordedPip) -> None:
    """Switching architecture must upload a new package, never reuse the other machine's wheels."""
    asset_keys = {
        architecture: {
            f["Code"]["S3Key"]
            for f in lambda_functions(synth_with_bundling(tmp_path / architecture, architecture, pip))
        }
        for architecture in ("arm64", "x86_64")
    }
    assert all(len(keys) == 1 for keys in asset_keys.values()), asset_keys
    assert asset_keys["arm64"].isdisjoint(asset_keys["x86_64"])


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
    assert (package / "functions" / "core" / "model.py").is_file()
    assert not list((package / "functions").rglob("__pycache__"))
    assert not list((package / "functions").rglob("tests"))

    extensions = [p.name for p in package.rglob("*.so")]
    pydantic_core_extensions = [name for name in extensions if name.startswith("_pydantic_core")]
    assert pydantic_core_extensions, extensions
    assert all("cpython-312-aarch64-linux-gnu" in name for name in pydantic_core_extensions)
    assert not [name for name in extensions if "x86_64" in name]
    # Bytecode of the local interpreter would be dead weight for the runtime's Python.
    assert not list(package.rglob("*.cpython-311.pyc"))
