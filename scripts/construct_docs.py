"""Write (or, with --check, verify) the tables of docs/construct.md that come from the options'
declarations (infra/options.py): the props of `HybridCounterProps`, and the app's context keys."""

from __future__ import annotations

import sys
from pathlib import Path

from infra import options
from infra.options import AppOption, Choice, EmailAddress, PropOfSeveral, Text, WholeNumber
from scripts.generated import write_or_check

CONSTRUCT_DOC = Path(__file__).resolve().parent.parent / "docs" / "construct.md"
BEGIN = "<!-- {name}: generated from infra/options.py by `make construct-docs` -->\n\n"
END = "\n<!-- end of {name} -->\n"

Declaration = WholeNumber[int | None] | Choice[options.Named] | EmailAddress | Text[str | None]


def render() -> str:
    document = CONSTRUCT_DOC.read_text(encoding="utf-8")
    for name, table in (("props", props_table()), ("context", context_table())):
        begin, end = BEGIN.format(name=name), END.format(name=name)
        start, stop = document.find(begin), document.find(end)
        if start < 0 or stop < start:
            raise SystemExit(f"{CONSTRUCT_DOC} has no {begin.strip()} ... {end.strip()}")
        document = document[:start] + begin + table + document[stop:]
    return document


def props_table() -> str:
    rows = ["| prop | default | the app's `-c` | what it is |", "|---|---|---|---|"]
    for prop in options.PROPS:
        if isinstance(prop, PropOfSeveral):
            keys = ", ".join(f"`{key.key}`" for key in prop.keys) or "none"
            rows.append(f"| `{prop.prop}` | {prop.default} | {keys} | {prop.doc} |")
        else:
            bounds = f"{takes(prop)}: " if isinstance(prop, WholeNumber) else ""
            rows.append(f"| `{prop.prop}` | {prop_default(prop)} | `{prop.key}` | {bounds}{prop.doc} |")
    return "\n".join(rows) + "\n"


def context_table() -> str:
    rows = ["| `-c` key | takes | default | sets |", "|---|---|---|---|"]
    for prop in options.PROPS:
        if isinstance(prop, PropOfSeveral):
            for key in prop.keys:
                rows.append(f"| `{key.key}` | {takes(key)} | {context_default(key)} | `{prop.prop}` |")
        else:
            rows.append(f"| `{prop.key}` | {takes(prop)} | {context_default(prop)} | `{prop.prop}` |")
    for option in options.APP_OPTIONS:
        rows.append(f"| `{option.key}` | {option.doc} | `{option.default}` | the app |")
    return "\n".join(rows) + "\n"


def takes(option: Declaration | AppOption) -> str:
    if isinstance(option, WholeNumber):
        if option.most is None:
            return f"a whole number, at least {option.least:,}"
        return f"a whole number, {option.least:,} to {option.most:,}"
    if isinstance(option, Choice):
        return " or ".join(f"`{name}`" for name in option.choices)
    if isinstance(option, EmailAddress):
        return "an email address"
    return option.doc


def prop_default(option: Declaration) -> str:
    if isinstance(option, Choice):
        return f"`{option.default_value.name}`"
    if isinstance(option, WholeNumber) and option.default is not None:
        return f"{option.default:,}"
    return "None"


def context_default(option: Declaration) -> str:
    if isinstance(option, Choice):
        return f"`{option.default}`"
    if isinstance(option, (WholeNumber, Text)) and option.default is not None:
        return f"`{option.default}`"
    return "unset"


def main() -> int:
    return write_or_check(__doc__, CONSTRUCT_DOC, render, "construct-docs")


if __name__ == "__main__":
    sys.exit(main())
