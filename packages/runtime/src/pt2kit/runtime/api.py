"""How every pt2kit package declares its public library surface: one way, the same everywhere.

A package's ``__init__.py`` lists its public names in ``__all__`` (the truth: nothing else is public,
and every name in it resolves) and loads them on first use through :func:`exports`, so importing the
package (``tool --help``) never imports torch::

    _PUBLIC = {"assert_same": ".check", "compare": ".metrics"}
    __all__ = ["__version__", *_PUBLIC]
    __getattr__, __dir__ = exports(__name__, _PUBLIC)

A tool uses another only through these names (``from pt2kit.fxcheck import run_checks``). Not
guaranteed: anything imported from a package's modules directly; they may change in any release.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def exports(package: str, names: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` that imports each public name from its module (``".check"``, or
    ``".profiles:resolve"`` where the public name differs) when first asked for, and its ``__dir__``."""

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = where.partition(":")
        return getattr(importlib.import_module(module, package), attr or name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__
