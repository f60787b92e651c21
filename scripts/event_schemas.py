"""Write (or, with --check, verify) docs/events.schema.json from the usage events' own models
(functions/usage_events/models.py): one JSON Schema of the `detail` of each event type, by detail-type."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from scripts.generated import write_or_check

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "docs" / "events.schema.json"


def render() -> str:
    from functions.usage_events.models import EVENT_TYPES, SOURCE

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
    return write_or_check(__doc__, SCHEMA_FILE, render, "event-schemas")


if __name__ == "__main__":
    sys.exit(main())
