"""The lint that keeps the account item's attribute names in functions/adapters/account_item.py
(scripts/item_names.py, run by `make lint`)."""

from __future__ import annotations

from pathlib import Path

from scripts.item_names import offences


def test_the_tree_names_the_account_item_only_in_its_module() -> None:
    assert offences() == []


def _tree(tmp_path: Path, relative: str, source: str) -> Path:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    for top in ("functions", "ops", "chaos"):
        (tmp_path / top).mkdir(exist_ok=True)
    return tmp_path


def test_an_adapter_reading_an_attribute_by_its_name_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path, "functions/adapters/store.py", 'def epoch(item):\n    return item.get("heal_epoch", 0)\n')
    assert offences(root) == ["functions/adapters/store.py:2: 'heal_epoch' is the account item's attribute"]


def test_a_lease_attribute_built_by_hand_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path, "functions/adapters/store.py", 'def name(token):\n    return f"lease_r_{token}"\n')
    assert offences(root) == ["functions/adapters/store.py:2: 'lease_r_' is the account item's attribute"]


def test_an_expression_naming_an_attribute_is_refused_anywhere(tmp_path: Path) -> None:
    root = _tree(tmp_path, "ops/repair.py", 'EXPRESSION = "ADD version :one SET room = :room"\n')
    assert offences(root) == ["ops/repair.py:1: an expression names room, version"]


def test_prose_and_other_families_attributes_pass(tmp_path: Path) -> None:
    source = '"""Reads the `limit` and the `version`."""\nADMITTED_BY = "shard"\n'
    root = _tree(tmp_path, "functions/adapters/resources.py", source)
    assert offences(root) == []  # a docstring; the resource's own `shard`
    root = _tree(tmp_path, "functions/core/audit.py", 'REPORT = {"limit": 1, "heal_epoch": 0}\n')
    assert offences(root) == []  # the core's report fields are no attributes (it never sees an item)
