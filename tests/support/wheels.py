"""A project's wheel, built as a user's `pip` builds it, and what it holds."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import dataclass
from email.message import Message
from email.parser import Parser
from pathlib import Path


@dataclass(frozen=True)
class Wheel:
    path: Path
    names: set[str]  # the archive's file names
    metadata: Message  # its .dist-info/METADATA


def build_wheel(project: Path, into: Path, distribution: str) -> Wheel:
    """`pip wheel` of `project` into `into`, with the pinned hatchling of requirements-dev.txt (no
    build isolation: not one fetched now); `distribution`: the wheel's file name prefix."""
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    built = subprocess.run(
        [*command, "--wheel-dir", str(into), str(project)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (path,) = into.glob(f"{distribution}-*.whl")
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        metadata = Parser().parsestr(
            archive.read(next(name for name in names if name.endswith(".dist-info/METADATA"))).decode()
        )
    return Wheel(path, names, metadata)
