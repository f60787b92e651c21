"""If-Match (RFC 9110, 13.1.1): the header's form, as the contract declares it, and what it asks
for, as the core reads it (the versions a change may apply to, or that the account must exist).

An account's ETag is its limit's version as a strong entity tag (`"3"`). If-Match compares
strongly, so a weak tag (`W/"3"`) matches no version, nor does a tag that is not a version.
"""

from __future__ import annotations

import re
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Header

# * or a list of entity tags, as the contract declares it: no more than the API takes. Spaces
# around them are HTTP's OWS (SP or HTAB, RFC 9110 5.6.3), not `\s`, whose other characters
# (\u3000) travel as UTF-8 and arrive as other text (a 400); and no comma inside a tag, which
# RFC 9110's etagc allows but a list of tags cannot hold (`parse_if_match`).
OWS = r"[ \t]*"
TAG = r'(W/)?"[\x21\x23-\x2b\x2d-\x7e]*"'
IF_MATCH_PATTERN = rf"^{OWS}(\*|{TAG}({OWS},{OWS}{TAG})*){OWS}$"
ENTITY_TAG = re.compile(rf'{OWS}(W/)?"([\x21\x23-\x7e]*)"{OWS}')
MAX_VERSION_DIGITS = 18  # versions count up from 1, one a change: none will ever have more digits

IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        max_length=1024,
        pattern=IF_MATCH_PATTERN,
        description='Change the account only if its ETag is one of these ("1", "2") or, with *, if it exists.',
    ),
]


ResourceIfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        max_length=1024,
        pattern=IF_MATCH_PATTERN,
        description='Resize the resource only if its ETag is one of these ("1", "2"); * matches any version.',
    ),
]


PlanIfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        max_length=1024,
        pattern=IF_MATCH_PATTERN,
        description='Change the plan only if its ETag is one of these ("1", "2") or, with *, if it exists.',
    ),
]


def parse_if_match(header: str | None) -> tuple[frozenset[int] | None, bool]:
    """If-Match as (the versions it allows, or None for any; whether the account must exist).

    A header the pattern lets through can still split into pieces that are not tags (a comma
    inside one: `"a,b"`): a 400, as the pattern's own refusals are."""
    if header is None:
        return None, False
    if header.strip() == "*":
        return None, True
    versions: set[int] = set()
    for tag in header.split(","):
        matched = ENTITY_TAG.fullmatch(tag)
        if matched is None:
            raise RequestValidationError(
                [{"loc": ("header", "If-Match"), "msg": "not a list of entity tags", "type": "value_error"}]
            )
        weak, opaque = matched.groups()
        if not weak and opaque.isdigit() and len(opaque) <= MAX_VERSION_DIGITS:
            versions.add(int(opaque))
    return frozenset(versions), False
