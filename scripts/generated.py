"""The command line of a script that writes a generated document the repository commits (docs/openapi.json,
docs/events.schema.json): it writes the document, or with --check fails when the committed one is stale."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(description: str | None, path: Path, render: Callable[[], str], make_target: str) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="fail if the committed document is stale")
    args = parser.parse_args()
    document = render()
    if args.check:
        if not path.exists() or path.read_text(encoding="utf-8") != document:
            print(f"{path} is stale: run `make {make_target}`", file=sys.stderr)
            return 1
        return 0
    path.write_text(document, encoding="utf-8")
    return 0
