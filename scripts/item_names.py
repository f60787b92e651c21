"""Lint: the account and admission shard item's attribute names are written in
functions/adapters/account_item.py only (`make lint` runs it; exit 1 lists each offence).

Two checks, over the string literals of the code (docstrings and comments are prose):

- in functions/adapters/ (the only layer that reads or writes items: the core and the API see
  domain values), no literal is one of the item's attribute names or starts with a lease prefix;
- in functions/, ops/ and chaos/, no DynamoDB expression (a literal with a `:value` placeholder, a
  condition function or an ADD/SET/REMOVE clause) names one of them: a clause is the module's.

A name the item shares with another item family (that family's own attribute) is let through in
that family's module only, by SHARED below. Elsewhere in ops/ and chaos/ the same words are HTTP
fields and report columns, not attributes: they read items through the module (chaos/truth.py).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from functions.adapters import account_item, keys, table_layout

ROOT = Path(__file__).resolve().parent.parent
OWNER = Path("functions/adapters/account_item.py")
SCANNED = ("functions", "ops", "chaos")
ADAPTERS = Path("functions/adapters")

# Every attribute name the module owns: its upper-case string constants, but the item types' values,
# `account_id` (every item family carries it) and what it imports of the table's layout and keys.
NOT_ATTRIBUTES = {account_item.ACCOUNT_TYPE, account_item.SHARD_TYPE, account_item.ACCOUNT_ID} | {
    value
    for module in (table_layout, keys)
    for name, value in vars(module).items()
    if name.isupper() and isinstance(value, str)
}
NAMES = frozenset(
    value
    for name, value in vars(account_item).items()
    if name.isupper() and isinstance(value, str) and re.fullmatch(r"[a-z_]+", value) and value not in NOT_ATTRIBUTES
)
LEASE_PREFIXES = tuple(account_item.LEASE_PREFIXES.values())

# Another item family's own attribute that has the same name: (module, name) -> whose it is.
SHARED = {
    (Path("functions/adapters/resources.py"), account_item.SHARD): "a resource's admitting shard",
    (Path("functions/adapters/resources.py"), account_item.CREATED_AT): "a resource's creation time",
    (Path("functions/adapters/resource_records.py"), account_item.CREATED_AT): "a resource's creation time",
    (Path("functions/adapters/refused_windows.py"), account_item.LIMIT): "the limit a refusal window saw",
    # A plan's quota (functions/adapters/plan_item.py) names its fields as a type's PUT does.
    (Path("functions/adapters/plan_item.py"), account_item.LIMIT): "a plan quota's limit",
    (Path("functions/adapters/plan_item.py"), account_item.THRESHOLDS): "a plan quota's thresholds",
    (Path("functions/adapters/plan_item.py"), account_item.PERIOD): "a plan quota's period",
    (Path("functions/adapters/plan_item.py"), account_item.PLAN_VERSION): "a plan's own version",
    (Path("functions/adapters/plan_item.py"), account_item.PLAN): "the plan item's type",
    # The activity index (declared with the table, which account_item.py imports) projects it.
    (Path("functions/adapters/table_layout.py"), account_item.HEALED_AT): "the activity index's projection",
    # The accounts index (the account registry) projects the membership.
    (Path("functions/adapters/table_layout.py"), account_item.PLAN): "the accounts index's projection",
    (Path("functions/adapters/table_layout.py"), account_item.PLAN_VERSION): "the accounts index's projection",
}

_EXPRESSION = re.compile(r":[a-z_]|\battribute_(not_)?exists\(|\bif_not_exists\(|(^|\s)(ADD|SET|REMOVE) ")
_WORD = re.compile(r"(?<![:#\w])[a-z_][a-z0-9_]*")


def _literals(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every string literal's line and text (the constant parts of f-strings), docstrings left out."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def offences(root: Path = ROOT) -> list[str]:
    found = []
    for top in SCANNED:
        for path in sorted((root / top).rglob("*.py")):
            relative = path.relative_to(root)
            if relative == OWNER:
                continue
            in_adapters = relative.is_relative_to(ADAPTERS)
            for line, text in _literals(ast.parse(path.read_text(), str(path))):
                if in_adapters and (text in NAMES or text.startswith(LEASE_PREFIXES)):
                    if (relative, text) not in SHARED:
                        found.append(f"{relative}:{line}: {text!r} is the account item's attribute")
                elif _EXPRESSION.search(text):
                    named = sorted(set(_WORD.findall(text)) & NAMES)
                    named = [name for name in named if (relative, name) not in SHARED]
                    if named:
                        found.append(f"{relative}:{line}: an expression names {', '.join(named)}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to check (default: this one)")
    found = offences(parser.parse_args().root)
    for offence in found:
        print(offence, file=sys.stderr)
    if found:
        print(f"use functions/adapters/account_item.py's names and clauses ({len(found)} found)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
