"""`cdk synth` through the pinned CLI (package.json) works from the repo root."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra import options
from infra.outputs import DEFAULT_STACK_NAME

pytestmark = [pytest.mark.infra, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_BIN = REPO_ROOT / "node_modules" / ".bin" / "cdk"


@pytest.mark.skipif(not CDK_BIN.exists(), reason="node_modules/.bin/cdk missing: run `npm ci` first")
def test_cdk_synth_from_the_repo_root(tmp_path: Path) -> None:
    environment = {
        **os.environ,
        # cdk.json runs `python3 app.py`: make that the interpreter running the tests (the venv's).
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        # Offline: no usage telemetry, no notices download.
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    command = [
        str(CDK_BIN),
        "synth",
        "--quiet",
        "--no-notices",
        "--output",
        str(tmp_path),
        # The bundler needs PyPI; it has its own test. This one checks the CLI, app and cdk.json.
        "--context",
        f"{options.SKIP_BUNDLING.key}=true",
    ]

    started = time.monotonic()
    completed = subprocess.run(
        command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=300, check=False
    )
    print(f"cdk synth: {time.monotonic() - started:.1f} s")

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert (tmp_path / f"{DEFAULT_STACK_NAME}.template.json").is_file()
