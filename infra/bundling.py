"""The one Lambda package shared by all functions, built on this machine without Docker.

The package root holds the `functions/` package itself (handlers are `functions.<name>.handler.handler`
and import `functions.core...`) with the third-party dependencies of functions/requirements.txt
installed beside it. Dependencies are downloaded as wheels for the Lambda runtime's Python version
and CPU architecture, never the developer machine's: a wheel with a C extension (pydantic_core)
built for x86_64 / CPython 3.11 would fail to import in the arm64 / Python 3.12 runtime.

The architecture is a deployment choice (`HybridCounterProps.architecture`; the app's context `architecture`).
`lambda_package` pairs the asset with the architecture it was built for, and the functions take
both from that pair, so a function never runs wheels built for another machine.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

from infra.layout import EXCLUDED_PATTERNS, FUNCTIONS_DIR, FUNCTIONS_PACKAGE, REQUIREMENTS_FILE

# The runtime is the single source of truth: the functions use it and the pip target below is
# derived from it (and from the architecture the package is built for).
LAMBDA_RUNTIME: Final = lambda_.Runtime.PYTHON_3_12

# Lambda architecture name -> machine name used in wheel platform tags.
_WHEEL_MACHINE_BY_ARCHITECTURE: Final = {"arm64": "aarch64", "x86_64": "x86_64"}
# The Python 3.12 runtime runs on Amazon Linux 2023 (glibc 2.34): manylinux2014 (glibc 2.17) wheels
# and manylinux_2_28 wheels both load there.
_MANYLINUX_POLICIES: Final = ("manylinux2014", "manylinux_2_28")

# Never pulled: local bundling always succeeds, but BundlingOptions requires an image.
PLACEHOLDER_IMAGE: Final = "placeholder/local-bundling-only-never-pulled"


def wheel_python_version(runtime: lambda_.Runtime = LAMBDA_RUNTIME) -> str:
    """'python3.12' -> '3.12'."""
    prefix = "python"
    if not runtime.name.startswith(prefix):
        raise ValueError(f"not a Python Lambda runtime: {runtime.name}")
    return runtime.name[len(prefix) :]


def wheel_platforms(architecture: lambda_.Architecture) -> tuple[str, ...]:
    """Wheel platform tags that load on the Lambda runtime of this architecture."""
    machine = _WHEEL_MACHINE_BY_ARCHITECTURE.get(architecture.name)
    if machine is None:
        allowed = ", ".join(f'"{name}"' for name in _WHEEL_MACHINE_BY_ARCHITECTURE)
        raise ValueError(f"no wheel platform for Lambda architecture {architecture.name!r} (known: {allowed})")
    return tuple(f"{policy}_{machine}" for policy in _MANYLINUX_POLICIES)


def pip_install_command(requirements: Path, target_dir: Path, architecture: lambda_.Architecture) -> list[str]:
    """pip command installing Lambda-platform wheels of `requirements` into `target_dir`."""
    platform_args = [arg for platform in wheel_platforms(architecture) for arg in ("--platform", platform)]
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--requirement",
        str(requirements),
        "--target",
        str(target_dir),
        *platform_args,
        "--implementation",
        "cp",
        "--python-version",
        wheel_python_version(),
        # Required by pip with --platform, and right anyway: no sdist gets built for the wrong machine.
        "--only-binary=:all:",
        # .pyc files compiled by the local interpreter are useless to the runtime's Python.
        "--no-compile",
        "--disable-pip-version-check",
        "--quiet",
    ]


def bundling_environment(architecture: lambda_.Architecture) -> dict[str, str]:
    """Recorded in the asset's bundling options, which its source hash covers (see `lambda_code`)."""
    return {
        "TARGET_PYTHON_VERSION": wheel_python_version(),
        "TARGET_ARCHITECTURE": architecture.name,
        "TARGET_PLATFORMS": ",".join(wheel_platforms(architecture)),
    }


# Runs a pip command and returns its result; the stack takes another in tests (offline, instant).
PipRunner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


def run_pip(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False)


@jsii.implements(cdk.ILocalBundling)
class LocalPythonBundler:
    """Builds the package with the Python running the CDK app, so Docker is never needed."""

    def __init__(
        self,
        architecture: lambda_.Architecture,
        functions_dir: Path = FUNCTIONS_DIR,
        requirements: Path = REQUIREMENTS_FILE,
        pip: PipRunner = run_pip,
    ) -> None:
        self._architecture = architecture
        self._functions_dir = functions_dir
        self._requirements = requirements
        self._pip = pip

    # jsii turns the BundlingOptions struct into keyword arguments only when the method declares at
    # least one keyword-only parameter; without one it passes the struct positionally and the call
    # fails. None of the options matter here.
    def try_bundle(self, output_dir: str, *, image: Any = None, **_other_options: Any) -> bool:
        self.bundle(Path(output_dir))
        return True

    def bundle(self, output_dir: Path) -> None:
        shutil.copytree(
            self._functions_dir,
            output_dir / FUNCTIONS_PACKAGE,
            ignore=shutil.ignore_patterns(*EXCLUDED_PATTERNS),
        )
        completed = self._pip(pip_install_command(self._requirements, output_dir, self._architecture))
        if completed.returncode != 0:
            raise RuntimeError(
                f"installing {self._requirements} for the Lambda runtime ({self._architecture.name}) failed "
                f"(exit {completed.returncode}):\n{completed.stdout}{completed.stderr}"
            )


def lambda_code(
    architecture: lambda_.Architecture, functions_dir: Path = FUNCTIONS_DIR, pip: PipRunner = run_pip
) -> lambda_.Code:
    """The asset shared by all functions of a stack (bind the same object to each function).

    Prefer `lambda_package`, which keeps the architecture the asset was built for next to it.
    """
    return lambda_.Code.from_asset(
        str(functions_dir),
        exclude=[f"**/{pattern}" for pattern in EXCLUDED_PATTERNS],
        bundling=cdk.BundlingOptions(
            image=cdk.DockerImage.from_registry(PLACEHOLDER_IMAGE),
            local=LocalPythonBundler(architecture, functions_dir, functions_dir / REQUIREMENTS_FILE.name, pip),
            # Never read by a container; recorded so the source hash (which covers the bundling
            # options) changes when the target platform does.
            environment=bundling_environment(architecture),
        ),
    )


@dataclass(frozen=True)
class LambdaPackage:
    """The shared code asset and the one architecture its wheels were installed for."""

    code: lambda_.Code
    architecture: lambda_.Architecture


def lambda_package(
    architecture: lambda_.Architecture, functions_dir: Path = FUNCTIONS_DIR, pip: PipRunner = run_pip
) -> LambdaPackage:
    """Build the asset for `architecture` once per stack; every function takes both from the result."""
    return LambdaPackage(code=lambda_code(architecture, functions_dir, pip), architecture=architecture)
