"""Lambda event filtering (FilterCriteria), as the event source mapping applies it before invoking.

A record is delivered when it matches any one pattern. In a pattern, every key must match. A
list of rules matches when any rule in it matches. The rules implemented are the ones Lambda
documents for event filtering: an exact value (string, number, boolean or null), `prefix`,
`suffix`, `equals-ignore-case`, `exists`, `anything-but` (a value, a list, or `{"prefix": ...}`)
and `numeric` comparisons.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

_MISSING = object()
_NUMERIC: dict[str, Callable[[float, float], bool]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class InvalidFilterPattern(ValueError):
    pass


def parse_filters(filter_criteria: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The patterns of an event source mapping's FilterCriteria (JSON strings, as AWS stores them)."""
    patterns = []
    for entry in (filter_criteria or {}).get("Filters", []):
        try:
            pattern = json.loads(entry["Pattern"])
        except (KeyError, TypeError, ValueError) as error:
            raise InvalidFilterPattern(f"unreadable filter pattern {entry!r}") from error
        if not isinstance(pattern, dict):
            raise InvalidFilterPattern(f"a filter pattern must be a JSON object: {pattern!r}")
        patterns.append(pattern)
    return patterns


def matches_any(patterns: Iterable[Mapping[str, Any]], record: Mapping[str, Any]) -> bool:
    """No patterns means no filtering: every record is delivered."""
    patterns = list(patterns)
    return not patterns or any(_matches_object(pattern, record) for pattern in patterns)


def _matches_object(pattern: Mapping[str, Any], value: Any) -> bool:
    for key, rule in pattern.items():
        field = value.get(key, _MISSING) if isinstance(value, Mapping) else _MISSING
        if isinstance(rule, Mapping):
            if field is _MISSING or not _matches_object(rule, field):
                return False
        elif isinstance(rule, list):
            if not _matches_rules(rule, field):
                return False
        else:
            raise InvalidFilterPattern(f"a pattern's leaves must be lists of rules, got {rule!r} for {key!r}")
    return True


def _matches_rules(rules: list[Any], field: Any) -> bool:
    values = field if isinstance(field, list) else [field]
    return any(_matches_rule(rule, value) for rule in rules for value in values)


def _matches_rule(rule: Any, value: Any) -> bool:
    if not isinstance(rule, Mapping):
        return value is not _MISSING and type(rule) is type(value) and rule == value
    if "exists" in rule:
        return (value is not _MISSING) is bool(rule["exists"])
    if value is _MISSING:
        return False
    if "prefix" in rule:
        return isinstance(value, str) and value.startswith(rule["prefix"])
    if "suffix" in rule:
        return isinstance(value, str) and value.endswith(rule["suffix"])
    if "equals-ignore-case" in rule:
        return isinstance(value, str) and value.lower() == str(rule["equals-ignore-case"]).lower()
    if "anything-but" in rule:
        excluded = rule["anything-but"]
        if isinstance(excluded, Mapping):
            return not _matches_rule(excluded, value)
        excluded = excluded if isinstance(excluded, list) else [excluded]
        return not any(_matches_rule(item, value) for item in excluded)
    if "numeric" in rule:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        terms = rule["numeric"]
        return all(_NUMERIC[terms[i]](value, terms[i + 1]) for i in range(0, len(terms), 2))
    raise InvalidFilterPattern(f"unsupported filter rule {rule!r}")
