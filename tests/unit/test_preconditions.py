"""If-Match (functions/api/preconditions.py): what a header asks of the account's version."""

from __future__ import annotations

import re

import pytest
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from hypothesis import given
from hypothesis import strategies as st

from functions.api.preconditions import IF_MATCH_PATTERN, parse_if_match


def test_no_header_allows_any_version_and_no_account() -> None:
    assert parse_if_match(None) == (None, False)


@pytest.mark.parametrize("header", ["*", " * "])
def test_a_star_allows_any_version_of_an_account_that_exists(header: str) -> None:
    assert parse_if_match(header) == (None, True)


@pytest.mark.parametrize(
    ("header", "versions"),
    [
        ('"1"', {1}),
        ('"1", "2"', {1, 2}),
        (' "7" ,"8"', {7, 8}),
        ('W/"1"', set()),  # If-Match compares strongly: a weak tag matches no version
        ('"2", W/"1"', {2}),
        ('"x"', set()),  # not a version
        ('"-1"', set()),
        ('""', set()),
        ('"' + "9" * 18 + '"', {int("9" * 18)}),
        ('"' + "9" * 19 + '"', set()),
    ],
)
def test_strong_tags_of_versions_are_the_versions_allowed(header: str, versions: set[int]) -> None:
    assert parse_if_match(header) == (frozenset(versions), False)


def test_a_comma_inside_a_tag_is_not_a_list_of_tags() -> None:
    """RFC 9110 lets a tag hold a comma (`"a,b"`); read as a list it is not one, so the declared
    pattern does not take it either (a schema-valid header the API refused, said schemathesis)."""
    assert not re.fullmatch(IF_MATCH_PATTERN, '"a,b"')
    with pytest.raises(RequestValidationError) as refused:
        parse_if_match('"a,b"')
    assert [error["loc"] for error in refused.value.errors()] == [("header", "If-Match")]


@given(st.from_regex(IF_MATCH_PATTERN, fullmatch=True))
def test_every_header_the_contract_takes_is_read_or_refused_as_a_bad_request(header: str) -> None:
    try:
        versions, must_exist = parse_if_match(header)
    except RequestValidationError:
        return
    assert must_exist == (versions is None)
    strong = re.findall(r'(?<!W/)"(\d{1,18})"', header)
    assert versions is None or versions == {int(version) for version in strong}
