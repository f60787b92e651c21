"""Lambda's event filtering rules, and the deployed patterns on real record shapes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.adapters import table_layout
from local.filters import InvalidFilterPattern, matches_any, parse_filters

RECORD = {
    "eventName": "INSERT",
    "dynamodb": {
        "Keys": {"pk": {"S": "ACCOUNT#a"}, "sk": {"S": "RESOURCE#r"}},
        "NewImage": {"counter_processed": {"BOOL": False}, "size": {"N": "5"}},
        "SizeBytes": 120,
    },
    "tags": ["blue", "green"],
}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ({"eventName": ["INSERT"]}, True),
        ({"eventName": ["MODIFY", "INSERT"]}, True),
        ({"eventName": ["REMOVE"]}, False),
        ({"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "RESOURCE#"}]}}}}, True),
        ({"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "ACCOUNT"}]}}}}, False),
        ({"dynamodb": {"Keys": {"sk": {"S": [{"suffix": "#r"}]}}}}, True),
        ({"eventName": [{"equals-ignore-case": "insert"}]}, True),
        ({"dynamodb": {"NewImage": {"deleted": [{"exists": False}]}}}, True),
        ({"dynamodb": {"NewImage": {"deleted": [{"exists": True}]}}}, False),
        ({"eventName": [{"anything-but": ["REMOVE"]}]}, True),
        ({"eventName": [{"anything-but": "INSERT"}]}, False),
        ({"eventName": [{"anything-but": {"prefix": "IN"}}]}, False),
        ({"dynamodb": {"SizeBytes": [{"numeric": [">", 100, "<=", 120]}]}}, True),
        ({"dynamodb": {"SizeBytes": [{"numeric": ["<", 100]}]}}, False),
        ({"dynamodb": {"NewImage": {"counter_processed": {"BOOL": [False]}}}}, True),
        ({"dynamodb": {"NewImage": {"counter_processed": {"BOOL": [0]}}}}, False),  # types must match
        ({"tags": ["green"]}, True),  # a list field matches when any element does
        ({"missing": {"deeper": ["x"]}}, False),
    ],
)
def test_rules(pattern: dict[str, Any], expected: bool) -> None:
    assert matches_any([pattern], RECORD) is expected


def test_no_patterns_means_everything_is_delivered() -> None:
    assert matches_any([], RECORD)


def test_any_pattern_may_match() -> None:
    assert matches_any([{"eventName": ["REMOVE"]}, {"eventName": ["INSERT"]}], RECORD)


def test_patterns_are_read_from_the_mapping_as_aws_stores_them() -> None:
    criteria = {"Filters": [{"Pattern": json.dumps(p)} for p in table_layout.STREAM_FILTER_PATTERNS]}
    assert parse_filters(criteria) == list(table_layout.STREAM_FILTER_PATTERNS)
    assert parse_filters(None) == []


@pytest.mark.parametrize("criteria", [{"Filters": [{"Pattern": "not json"}]}, {"Filters": [{"Pattern": "[1]"}]}])
def test_unreadable_patterns_are_refused(criteria: dict[str, Any]) -> None:
    with pytest.raises(InvalidFilterPattern):
        parse_filters(criteria)


def test_unknown_rules_are_refused() -> None:
    with pytest.raises(InvalidFilterPattern):
        matches_any([{"eventName": [{"wildcard": "IN*"}]}], RECORD)
