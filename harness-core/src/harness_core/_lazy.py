"""Package names imported on first use (PEP 562), so importing a package costs only what is
used: `harness --help` and the query commands never load what they do not need."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: each name in `exports` is imported from the
    submodule it maps to (or the module, given its full dotted name) the first time it is
    asked for, then kept in the package."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # A submodule of `package`, or (a dotted name) a module of another package.
        where = module if "." in module else f"{package}.{module}"
        value = getattr(importlib.import_module(where), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
