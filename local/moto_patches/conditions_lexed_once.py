"""Each ConditionExpression text is split into tokens once; every parse gets fresh tokens.

Upstream (`ConditionExpressionParser._lex_condition_expression`): moto splits every
ConditionExpression with a dozen regular expressions, once per UpdateItem, PutItem and transaction
action (twice per transaction update): 4% of the emulator's time under `make bench-load` (py-spy).
The tokens depend on the text alone.
"""

from __future__ import annotations

import functools
from collections import deque
from typing import Any


def apply() -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    lex = ConditionExpressionParser._lex_condition_expression

    @functools.lru_cache(maxsize=1024)
    def tokens_of(expression: str) -> tuple[Any, ...]:
        return tuple(lex(ConditionExpressionParser(expression, None, None)))

    def lex_once(self: Any) -> Any:
        return deque(token._replace(children=list(token.children)) for token in tokens_of(self.condition_expression))

    ConditionExpressionParser._lex_condition_expression = lex_once  # type: ignore[method-assign]
