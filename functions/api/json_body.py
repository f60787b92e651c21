"""The API's JSON bodies: requests read strictly, responses written so that they cannot fail.

A request body must be JSON as RFC 8259 defines it, holding only what the service keeps exactly
(docs/api.md, "Request bodies", lists the rules for clients):

* no `NaN`, `Infinity` or `-Infinity` (Python's parser takes them; JSON has no such numbers);
* no name twice in one object (RFC 8259 4: names SHOULD be unique; keeping one value would
  silently change the data sent);
* Unicode text only: no lone UTF-16 surrogate (`\\ud800`) in any string or name, which no UTF-8
  answer could carry back;
* at most `MAX_DEPTH` levels of objects and arrays, DynamoDB's own document nesting limit: the
  body is level 1, so a create's `attributes` object is level 2;
* numbers the service holds exactly, never rounded: an integer (no fraction or exponent in the
  text) of at most 38 digits, kept as a Python int (DynamoDB's number precision); any number
  within DynamoDB's range (magnitude at most 9.9999999999999999999999999999999999999E+125, and
  0 or at least 1E-130); and any other number only if a 64-bit double holds it exactly, i.e. its
  shortest double is numerically the text sent (`0.1` and `1.5e3` pass; `0.30000000000000001`
  does not; 15 significant digits always pass).

A body that breaks a rule raises `BodyRefused`, a `json.JSONDecodeError` whose message names the
place (`attributes.k: ...`): Powertools' validation turns it into a 400 before any route runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from functions.core.model import PageBudget, Resource

MAX_DEPTH = 32
MAX_INTEGER_DIGITS = 38
LARGEST_NUMBER = Decimal("9.9999999999999999999999999999999999999E+125")
SMALLEST_NUMBER = Decimal("1E-130")
# The doubles at the range's ends whose shortest text (what a client's JSON writes) is within it.
LARGEST_DOUBLE = 9.999999999999998e125  # 1e126, the double nearest LARGEST_NUMBER, is written 1e+126
SMALLEST_DOUBLE = 1e-130
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a str from JSON holds a valid pair as one code point
MAX_NAME_SHOWN = 64
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"


class BodyRefused(json.JSONDecodeError):
    """A body Python's parser reads but the API does not take; `msg` is `place: reason`."""

    def __init__(self, place: str, reason: str, document: str) -> None:
        super().__init__(f"{place or 'body'}: {reason}", document, 0)


@dataclass(frozen=True)
class _Refused:
    """Left by a parser hook where a value breaks a rule; the walk afterwards names its place."""

    reason: str


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a JSON number")


def _integer(text: str) -> int | _Refused:
    # Checked before int(): Python refuses to convert more than 4,300 digits (a ValueError).
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        return _Refused(f"an integer of more than {MAX_INTEGER_DIGITS} digits")
    return int(text)


def _number(text: str) -> float | _Refused:
    exact = Decimal(text)
    magnitude = exact.copy_abs()  # no context: a huge exponent compares without overflowing
    if magnitude and not SMALLEST_NUMBER <= magnitude <= LARGEST_NUMBER:
        return _Refused(f"outside DynamoDB's number range ({SMALLEST_NUMBER} to {LARGEST_NUMBER} in magnitude)")
    value = float(text)
    if Decimal(repr(value)) != exact:
        return _Refused(f"not held exactly by a 64-bit double (it would be {value!r}); send fewer digits")
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, value in pairs:
        found[name] = _Refused("the name appears twice in its object") if name in found else value
    return found


def _shown(name: str | int) -> str:
    """A name as a message shows it: lone surrogates escaped (the message must be sendable), shortened."""
    text = str(name).encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= MAX_NAME_SHOWN else text[:MAX_NAME_SHOWN] + "..."


def _surrogate(text: str) -> str | None:
    found = LONE_SURROGATE.search(text)
    return None if found is None else f"a lone UTF-16 surrogate (\\u{ord(found.group()):04x}) is not Unicode text"


def _first_refusal(value: Any, place: str, depth: int) -> tuple[str, str] | None:
    """The first rule `value` breaks, in document order, and its place (names joined by dots)."""
    if isinstance(value, _Refused):
        return place, value.reason
    if isinstance(value, str):
        reason = _surrogate(value)
        return None if reason is None else (place, reason)
    if not isinstance(value, (dict, list)):
        return None
    if depth > MAX_DEPTH:
        return place, TOO_DEEP
    members = value.items() if isinstance(value, dict) else enumerate(value)
    for name, member in members:
        inner = f"{place}.{_shown(name)}" if place else _shown(name)
        reason = _surrogate(name) if isinstance(name, str) else None
        found = (inner, reason) if reason else _first_refusal(member, inner, depth + 1)
        if found:
            return found
    return None


def parse_body(text: str) -> Any:
    """The body's JSON value; raises BodyRefused (or JSONDecodeError for text that is not JSON)."""
    try:
        value = json.loads(
            text, parse_constant=_constant, parse_int=_integer, parse_float=_number, object_pairs_hook=_object
        )
    except RecursionError:
        # Python's parser ran out of stack, hundreds of levels past the bound.
        raise BodyRefused("", TOO_DEEP, text) from None
    refusal = _first_refusal(value, "", 1)
    if refusal is not None:
        raise BodyRefused(*refusal, text)
    return value


def render(value: Any) -> str:
    """A response body's JSON text; it cannot fail for a value read from the table.

    Characters stay as they are (a non-ASCII one is 2-4 bytes, not a 6-12 byte escape); a lone
    surrogate, which only data stored before these rules can hold, is written as its escape
    (`\\ud800`), so the answer is valid UTF-8 and reads back as the same string."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def escaped_size(text: str) -> int:
    """The bytes `text` takes inside a string of the function's proxy response (its quotes aside):
    JSON-escaped, UTF-8, non-ASCII as is, as the python3.12 runtime writes it (awslambdaric's
    marshaller, `ensure_ascii=False` from python3.12)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace")) - 2


# Lambda refuses a function response over 6 MB (6,291,456 bytes: the proxy JSON, the body escaped
# inside it), and API Gateway answers 502. A resource of a 64 KiB body can take twice that once
# escaped (a `"` is `\"` in the body, `\\\"` in the proxy JSON), so a list page also stops before
# its items take more than this; the margin covers the page's own keys, its cursor, the status
# and the headers.
PAGE_ITEMS_BUDGET = 6_000_000


def page_budget(listed: Callable[[Resource], Any]) -> PageBudget:
    """The room a list page has for its items, each `listed` as the page renders it."""

    def listed_size(resource: Resource) -> int:
        """The bytes one item adds to a page's proxy response: its JSON escaped, and a comma."""
        return escaped_size(render(listed(resource))) + 1

    return PageBudget(room=PAGE_ITEMS_BUDGET, size_of=listed_size)
