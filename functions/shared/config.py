"""Settings read once at cold start; a missing variable fails loudly with its name."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from functions.core import schema
from functions.core.sweeper import SweepSettings


class ConfigurationError(RuntimeError):
    pass


@dataclass(frozen=True)
class Settings:
    table_name: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        table_name = env.get(schema.ENV_TABLE_NAME, "").strip()
        if not table_name:
            raise ConfigurationError(f"environment variable {schema.ENV_TABLE_NAME} must name the table")
        return cls(table_name=table_name)


def sweep_settings(env: Mapping[str, str] | None = None) -> SweepSettings:
    """The sweeper's settings; each variable is optional and must be a whole number of seconds."""
    env = os.environ if env is None else env
    defaults = SweepSettings()

    def seconds(name: str, default: timedelta) -> timedelta:
        raw = env.get(name, "").strip()
        if not raw:
            return default
        if not raw.isdigit():
            raise ConfigurationError(f"environment variable {name} must be a whole number of seconds, got {raw!r}")
        return timedelta(seconds=int(raw))

    return SweepSettings(
        pending_older_than=seconds(schema.ENV_SWEEP_PENDING_OLDER_THAN_SECONDS, defaults.pending_older_than),
        quiet=seconds(schema.ENV_HEAL_QUIET_SECONDS, defaults.quiet),
        lookback=seconds(schema.ENV_HEAL_LOOKBACK_SECONDS, defaults.lookback),
    )
