"""Public names imported on first use, for packages whose modules are heavy (model SDKs, DuckDB,
pandas): importing one light module of the package (a config, the limits) must not load the rest.

    __getattr__, __dir__ = lazy_names(__name__, {"Agent": "parquet_agent.agent.loop"})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any],
                                                                 Callable[[], list[str]]]:
    """A module `__getattr__` that imports `names[name]` (a module path) and takes `name` from it,
    caching it in the package; and the matching `__dir__`."""

    def getattr_(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = importlib.import_module(where)
        value = loaded if where.endswith("." + name) else getattr(loaded, name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return getattr_, dir_
