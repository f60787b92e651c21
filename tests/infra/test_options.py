"""The options' declarations (infra/options.py) against the props they set: every prop is declared
once, with the props' own default, and every context key names one option."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from infra import options
from infra.options import Choice, EmailAddress, PropOfSeveral, WholeNumber
from infra.props import HybridCounterProps


def test_every_prop_is_declared_once_in_the_order_of_the_docs() -> None:
    declared = [option.prop for option in options.PROPS]
    assert sorted(declared) == sorted(field.name for field in dataclasses.fields(HybridCounterProps))
    assert len(set(declared)) == len(declared)


@pytest.mark.parametrize("option", [o for o in options.PROPS if not isinstance(o, (PropOfSeveral, EmailAddress))])
def test_each_declared_default_is_the_props_default(option: WholeNumber[int | None] | Choice[options.Named]) -> None:
    default = getattr(HybridCounterProps(), option.prop)
    if isinstance(option, Choice):
        assert default.name == option.default_value.name
    else:
        assert default == option.default


def test_every_context_key_names_one_option() -> None:
    keys = [option.key for option in options.APP_OPTIONS]
    for option in options.PROPS:
        keys += [key.key for key in option.keys] if isinstance(option, PropOfSeveral) else [option.key]
    assert len(set(keys)) == len(keys), keys


@pytest.mark.parametrize("option", options.WHOLE_NUMBERS)
def test_a_whole_number_prop_refuses_what_is_outside_its_bounds(option: WholeNumber[int | None]) -> None:
    outside: list[Any] = [option.least - 1, True, "1"] + ([] if option.most is None else [option.most + 1])
    for value in outside:
        with pytest.raises(ValueError, match=f"HybridCounterProps.{option.prop} must be a whole number"):
            HybridCounterProps(**{option.prop: value})
    inside: dict[str, Any] = {option.prop: option.least}
    HybridCounterProps(**inside)
