"""A response class's methods are listed once, not on every request.

Upstream (`BaseResponse.call_action`): to find the method of a request's action, moto lists every
function of the response class (`method_names_from_class`, through `inspect.getmembers`) on each
request: 6% of the emulator's time in a sample of the handler tier (cProfile, 2026-11-28). The
list depends on the class alone, and no class changes once the emulator's changes are applied,
before it answers anything.
"""

from __future__ import annotations

import functools


def apply() -> None:
    from moto.core import responses
    from moto.core.utils import method_names_from_class as list_methods

    @functools.cache
    def methods_of(response_class: type) -> frozenset[str]:
        return frozenset(list_methods(response_class))

    # call_action looks the name up in its own module, and only asks whether an action is among them.
    responses.method_names_from_class = methods_of  # type: ignore[attr-defined,assignment]
