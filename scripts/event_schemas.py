"""Write (or, with --check, verify) docs/events.schema.json from the usage events' own models
(functions/events/models.py): one JSON Schema of the `detail` of each event type, by detail-type."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "docs" / "events.schema.json"


def render() -> str:
    from functions.events.models import EVENT_TYPES, SOURCE

    definitions: dict[str, Any] = {}
    for detail_type, model in EVENT_TYPES.items():
        schema = model.model_json_schema()
        schema["x-detail-type"] = detail_type
        definitions[model.__name__] = schema
    document = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Hybrid counter usage events",
        "description": f"The `detail` of each event the stack puts on its EventBridge bus with source `{SOURCE}`, "
        "by detail-type (`x-detail-type`); docs/events.md shows an example of each.",
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in definitions],
        "$defs": definitions,
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the committed document is stale")
    args = parser.parse_args()
    document = render()
    if args.check:
        if not SCHEMA_FILE.exists() or SCHEMA_FILE.read_text(encoding="utf-8") != document:
            print(f"{SCHEMA_FILE} is stale: run `make event-schemas`", file=sys.stderr)
            return 1
        return 0
    SCHEMA_FILE.write_text(document, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
