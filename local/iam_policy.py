"""The part of IAM policy evaluation the local API Gateway needs: may this principal
`execute-api:Invoke` this method ARN? (docs/local-runtime.md)

Identity policies only, as the deployed roles have them: an explicit Deny wins, else an Allow whose
Action and Resource match, else the implicit deny (IAM user guide, "Policy evaluation logic").
Wildcards `*` (any run of characters, `/` included) and `?` (one character) in Action and Resource
(IAM JSON policy reference, "Resource"); actions match without regard to case. A policy variable
`${aws:PrincipalTag/KEY}` in a Resource is replaced by the session's tag, literally (its value's
characters are not wildcards); a statement whose variable has no value matches nothing; `${*}`,
`${?}` and `${$}` stand for a literal `*`, `?` and `$` ("IAM policy elements: Variables and tags").
A statement with a Condition, NotAction or NotResource is refused outright rather than guessed at:
the roles' identity policies declare none. `string_like` is the StringLike condition operator's
match with the same rules, for checking the tenant role's trust policy (tests/infra).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_PARTS = re.compile(r"(\$\{[^}]*\}|\*|\?)")
_SPECIAL_CHARACTERS = ("${*}", "${?}", "${$}")


class UnsupportedPolicy(ValueError):
    """A statement this evaluator does not implement; the local gateway refuses to guess."""


def execute_api_arn(region: str, account: str, api_id: str, stage: str, method: str, path: str) -> str:
    """The resource an API call is authorized against: arn:aws:execute-api:...:API/STAGE/METHOD/PATH."""
    return f"arn:aws:execute-api:{region}:{account}:{api_id}/{stage}/{method}/{path.lstrip('/')}"


def allowed(policies: Iterable[Mapping[str, Any]], action: str, resource: str, tags: Mapping[str, str]) -> bool:
    verdict = False
    for policy in policies:
        for statement in _listed(policy.get("Statement", [])):
            if {"Condition", "NotAction", "NotResource", "NotPrincipal"} & set(statement):
                raise UnsupportedPolicy(f"statement not evaluated locally: {statement}")
            if not any(_matches(pattern, action, {}, case_sensitive=False) for pattern in _listed(statement["Action"])):
                continue
            if not any(_matches(pattern, resource, tags) for pattern in _listed(statement["Resource"])):
                continue
            if statement["Effect"] == "Deny":
                return False
            verdict = True
    return verdict


def string_like(pattern: str, value: str) -> bool:
    """StringLike: `*` and `?` wildcards, case-sensitive, the special variables as their characters
    (IAM JSON policy reference, "Condition operators")."""
    return _matches(pattern, value, {})


def _listed(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else [value]


def _matches(pattern: str, value: str, tags: Mapping[str, str], case_sensitive: bool = True) -> bool:
    regex = ""
    for part in _PARTS.split(pattern):
        if part == "*":
            regex += ".*"
        elif part == "?":
            regex += "."
        elif part in _SPECIAL_CHARACTERS:
            regex += re.escape(part[2:-1])
        elif part.startswith("${") and part.endswith("}"):
            variable = part[2:-1]
            if not variable.startswith("aws:PrincipalTag/") or variable.split("/", 1)[1] not in tags:
                return False  # a variable without a value: the statement does not apply
            regex += re.escape(tags[variable.split("/", 1)[1]])
        else:
            regex += re.escape(part)
    return re.fullmatch(regex, value, 0 if case_sensitive else re.IGNORECASE) is not None
