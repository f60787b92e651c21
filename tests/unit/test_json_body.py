"""The API's JSON rules (functions/api/json_body.py): what a request body may hold, and responses
that cannot fail to render."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from functions.api.json_body import MAX_DEPTH, BodyRefused, escaped_size, parse_body, render


def nested_lists(levels: int) -> str:
    """A body whose deepest container is at `levels` (the body itself is level 1)."""
    return "[" * levels + "1" + "]" * levels


def nested_objects(levels: int) -> str:
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def refusal(text: str) -> str:
    with pytest.raises(BodyRefused) as refused:
        parse_body(text)
    assert isinstance(refused.value, json.JSONDecodeError)  # Powertools makes it a 400 ValidationError
    return refused.value.msg


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"k": NaN}', "k: NaN is not a JSON number"),
        ('{"k": [1, Infinity]}', "k.1: Infinity is not a JSON number"),
        ('{"a": {"k": -Infinity}}', "a.k: -Infinity is not a JSON number"),
        ('{"name": "a", "name": "b"}', "name: the name appears twice in its object"),
        ('{"a": {"k": 1, "k": 1}}', "a.k: the name appears twice in its object"),
        ('{"a": {"k": "\\ud800"}}', "a.k: a lone UTF-16 surrogate (\\ud800) is not Unicode text"),
        ('{"a": {"k": "x\udfffy"}}', "a.k: a lone UTF-16 surrogate (\\udfff) is not Unicode text"),
        ('{"a": {"\\udc00": 1}}', "a.\\udc00: a lone UTF-16 surrogate (\\udc00) is not Unicode text"),
        ('"\\ud83d"', "body: a lone UTF-16 surrogate (\\ud83d) is not Unicode text"),
        ('{"n": 123456789012345678901234567890123456789}', "n: an integer of more than 38 digits"),
        ('{"n": -123456789012345678901234567890123456789}', "n: an integer of more than 38 digits"),
        ('{"n": ' + "9" * 5000 + "}", "n: an integer of more than 38 digits"),
        ('{"n": 1e309}', "n: outside DynamoDB's number range"),
        ('{"n": 1E126}', "n: outside DynamoDB's number range"),
        ('{"n": -1e126}', "n: outside DynamoDB's number range"),
        ('{"n": 1e-131}', "n: outside DynamoDB's number range"),
        ('{"n": 1e-99999999999}', "n: outside DynamoDB's number range"),
        ('{"n": 5e-324}', "n: outside DynamoDB's number range"),  # a double, but not DynamoDB's
        ('{"n": 0.30000000000000001}', "n: not held exactly by a 64-bit double"),
        ('{"n": 9007199254740993.0}', "n: not held exactly by a 64-bit double"),
        ('{"n": 1.' + "1" * 5000 + "}", "n: not held exactly by a 64-bit double"),
    ],
)
def test_what_the_service_cannot_hold_exactly_is_refused_with_its_place(text: str, message: str) -> None:
    assert refusal(text).startswith(message), refusal(text)


def test_nesting_is_bounded_at_32_levels_the_body_being_the_first() -> None:
    assert MAX_DEPTH == 32
    assert parse_body(nested_lists(MAX_DEPTH))  # the deepest container at level 32
    assert parse_body(nested_objects(MAX_DEPTH))
    assert refusal(nested_lists(MAX_DEPTH + 1)) == "0" + ".0" * 31 + f": nested deeper than {MAX_DEPTH} levels"
    assert refusal(nested_objects(MAX_DEPTH + 1)) == "a" + ".a" * 31 + f": nested deeper than {MAX_DEPTH} levels"


@pytest.mark.parametrize("levels", [1_000, 30_000])
def test_nesting_too_deep_for_the_parser_is_refused_too(levels: int) -> None:
    """Python's parser runs out of stack (RecursionError) long before a 64 KiB body runs out: at
    1,000 levels on 3.11, past them on 3.12 (Lambda's), which then names the 33rd level as for any
    body nested too deep."""
    where = refusal(nested_lists(levels)).removesuffix(f": nested deeper than {MAX_DEPTH} levels")
    assert where in ("body", "0" + ".0" * 31), where


@pytest.mark.parametrize(
    "text",
    [
        "0.1",
        "1.5e3",
        "-0.0",
        "1e-130",
        "-1E-130",
        "1e125",
        "9.99999999999999e125",
        "1.23456789012345",  # 15 significant digits always pass
        "0.000123456789012345",
        "123456789012345e-20",
        "7.0",
    ],
)
def test_numbers_a_double_holds_exactly_pass_as_floats(text: str) -> None:
    value = parse_body(text)
    assert isinstance(value, float)
    assert Decimal(repr(value)) == Decimal(text)


def test_integers_of_up_to_38_digits_are_kept_exact() -> None:
    largest = "9" * 38
    assert parse_body(largest) == int(largest)
    assert parse_body("-" + largest) == -int(largest)
    assert isinstance(parse_body("0"), int)
    assert parse_body('{"n": 12345678901234567890123}') == {"n": 12345678901234567890123}


@given(st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(lambda d: d != 0))
def test_fifteen_significant_digits_always_pass_within_the_range(number: Decimal) -> None:
    rounded = Decimal(f"{number:.14e}")
    if not Decimal("1e-130") <= abs(rounded) <= Decimal("9.9999999999999999999999999999999999999e125"):
        return
    value = parse_body(f"{rounded:e}")
    assert Decimal(repr(value)) == rounded


def test_valid_json_of_every_kind_parses_as_the_standard_library_does() -> None:
    text = '{"s": "h\\u00e9 \\ud83d\\ude00 \\"q\\"", "t": true, "f": false, "z": null, "l": [1, [], {}], "o": {"p": 2}}'
    assert parse_body(text) == json.loads(text)


def test_invalid_json_stays_a_json_decode_error() -> None:
    for text in ("{", "{'a': 1}", '{"a": 01}', "[1,]", '"\x01"'):
        with pytest.raises(json.JSONDecodeError) as failed:
            parse_body(text)
        assert not isinstance(failed.value, BodyRefused)


def test_a_long_name_is_shortened_in_the_message() -> None:
    message = refusal(json.dumps({"k" * 10_000: float("nan")}))
    assert len(message) < 200


# -- responses --------------------------------------------------------------------------------


def test_render_escapes_lone_surrogates_stored_before_the_rules() -> None:
    text = render({"k\udc00": "a\ud800b", "ok": "h\u00e9 \U0001f600"})
    text.encode("utf-8")  # sendable
    assert json.loads(text) == {"k\udc00": "a\ud800b", "ok": "h\u00e9 \U0001f600"}
    assert "h\u00e9" in text  # other characters stay as they are: no 6-byte escapes


def test_render_handles_nesting_as_deep_as_older_versions_could_store() -> None:
    deep: Any = 1
    for _ in range(900):
        deep = [deep]
    assert json.loads(render({"a": deep})) == {"a": deep}


def test_escaped_size_is_the_bytes_of_the_text_inside_a_json_string() -> None:
    assert escaped_size("ab") == len("ab")
    assert escaped_size('"\\') == len('\\"\\\\')
    assert escaped_size("\x01") == len("\\u0001")
    assert escaped_size("\u00e9") == 2  # UTF-8, as the python3.12 runtime writes it
