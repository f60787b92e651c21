"""Record today's stack layout as the released one (infra/released_layout.json): run on purpose,
with a CHANGELOG line, when a release changes the table (tests/infra/test_upgrade.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

RELEASED_LAYOUT = Path(__file__).resolve().parent.parent / "infra" / "released_layout.json"


def main() -> int:
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    from infra.layout_guard import layout_of
    from infra.synth import synth_template_json

    RELEASED_LAYOUT.write_text(json.dumps(layout_of(synth_template_json()), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RELEASED_LAYOUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
