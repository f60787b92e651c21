"""mypy reads only the aws-cdk-lib modules pyproject.toml lists (reading all ~300 took most of a
cold `make typecheck`): every module the stack imports must be on that list, or its calls would go
unchecked as Any without anyone noticing. The examples' stacks (examples/) are type-checked too."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cdk_modules_imported() -> set[str]:
    found: set[str] = set()
    for path in [ROOT / "app.py", *sorted((ROOT / "infra").rglob("*.py")), *sorted((ROOT / "examples").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
                found.add(node.module)
                if node.module == "aws_cdk":
                    found.update(f"aws_cdk.{alias.name}" for alias in node.names if alias.name.startswith("aws_"))
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "aws_cdk")
    return found


def test_every_aws_cdk_module_the_stack_imports_is_type_checked() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    read = {
        module
        for override in config["tool"]["mypy"]["overrides"]
        if override.get("follow_imports") == "normal"
        for module in override["module"]
    }
    imported = cdk_modules_imported()
    assert "aws_cdk.aws_dynamodb" in imported  # the scan sees the stack's imports
    assert imported - read == set()
