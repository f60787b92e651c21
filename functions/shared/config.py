"""Settings read once at cold start; a missing variable fails loudly with its name."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from functions.core import schema


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
