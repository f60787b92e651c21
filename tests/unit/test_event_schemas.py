"""The usage events' contract: docs/events.schema.json is generated from the models the code puts,
and docs/events.md's example of each event type is one the models accept."""

from __future__ import annotations

import json
import re
from pathlib import Path

from functions.usage_events.models import EVENT_TYPES, SOURCE
from scripts.event_schemas import SCHEMA_FILE, render

EVENTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def test_the_committed_schema_is_the_models() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render(), "run `make event-schemas`"


def test_every_event_type_has_its_schema_and_an_example_the_model_accepts() -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert {definition["x-detail-type"] for definition in schema["$defs"].values()} == set(EVENT_TYPES)
    blocks = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", EVENTS_DOC.read_text(), re.DOTALL)]
    examples = {block["detail-type"]: block for block in blocks if block.get("source") == SOURCE}
    assert set(examples) == set(EVENT_TYPES)
    for detail_type, example in examples.items():
        EVENT_TYPES[detail_type].model_validate(example["detail"])
