"""A chaos run's checks: each a name, how many times it was checked, and its violations."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Check:
    name: str
    checked: int = 0
    violations: list[str] = field(default_factory=list)

    def expect(self, condition: bool, message: str) -> None:
        self.checked += 1
        if not condition and len(self.violations) < 20:
            self.violations.append(message)
        elif not condition:
            self.violations.append("...")
