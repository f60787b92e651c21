"""`make lint`'s template check: cfn-lint over the synthesized stack; any error fails.

Warnings are printed, not fatal: CDK's own boilerplate draws W3005 (a DependsOn that a GetAtt
already implies, on every function's role), which is harmless and not ours to change.
"""

from __future__ import annotations

import json
import os
import sys

from cfnlint.api import lint


def main() -> int:
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from infra.synth import synthesize_stack_template

    matches = lint(json.dumps(synthesize_stack_template()))
    for match in matches:
        print(f"{match.rule.id} {match.message} ({'/'.join(map(str, match.path))})")
    errors = [match for match in matches if match.rule.id.startswith("E")]
    print(f"cfn-lint: {len(errors)} error(s), {len(matches) - len(errors)} other finding(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
