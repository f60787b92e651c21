"""Where the Lambda code lives and what its package leaves out.

Free of aws_cdk on purpose: the local runtime packages the same folder without loading CDK (and
its Node process) into a long-running process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
FUNCTIONS_PACKAGE: Final = "functions"
FUNCTIONS_DIR: Final = REPO_ROOT / FUNCTIONS_PACKAGE
REQUIREMENTS_FILE: Final = FUNCTIONS_DIR / "requirements.txt"

# Not part of the deployed package: caches, tests and editor/tool litter.
EXCLUDED_PATTERNS: Final = (
    "__pycache__",
    "*.pyc",
    "*.pyo",
    "tests",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".DS_Store",
)
