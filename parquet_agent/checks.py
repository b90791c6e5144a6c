"""Checks for records built from config tables: each failure is a `ConfigError` that names the
key and where it was (`smoke.toml: [[models]][1].temperature: ...`).

    check_keys(where, table, allowed)      # unknown keys are errors, with "did you mean"
    check_type(where, value, int, "an integer")
    raise fail(join(where, "n"), "is not a positive integer")
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from parquet_agent.errors import ConfigError


def fail(where: str, message: str) -> ConfigError:
    """The error to raise: `<where>: <message>`."""
    return ConfigError(f"{where}: {message}" if where else message)


def join(where: str, key: str) -> str:
    """`where.key` (or `where key` after a `file:` prefix): the place of one key."""
    return f"{where}.{key}" if where and not where.endswith(":") else f"{where} {key}".strip()


def check_type(where: str, value: Any, types: type | tuple[type, ...], what: str) -> None:
    """ConfigError unless `value` is one of `types` (a bool is not an int here)."""
    # bool is an int subclass: `max_rounds = true` must not pass as 1
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise fail(where, f"expected {what}, got {value!r}")
    if not isinstance(value, types):
        raise fail(where, f"expected {what}, got {type(value).__name__} {value!r}")


def check_keys(where: str, data: Mapping[str, Any], allowed: Sequence[str]) -> None:
    """ConfigError for the first key of `data` not in `allowed`, with the closest allowed key."""
    for key in data:
        if key not in allowed:
            near = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise fail(where, f"unknown key {key!r}{hint}; allowed: {', '.join(allowed)}")
