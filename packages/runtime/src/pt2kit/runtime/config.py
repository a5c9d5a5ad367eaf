"""``--config KEY=VALUE``: settings of torch._inductor.config and torch._dynamo.config.

``KEY`` is a dotted name as the config module spells it (``cpp.inject_relu_bug_TESTING_ONLY``,
``trace.provenance_tracking_level``). Prefix ``inductor.``, ``dynamo.`` or ``functorch.`` to pick the
module; without a prefix Inductor's is tried first, then Dynamo's. VALUE is converted to the type
of the current value (``true``/``false``/``1``/``0`` for booleans, Python literals for lists).

Guarantees: a typed value crosses a process boundary as :func:`literal` text and comes back from
:func:`from_literal` equal and of the same types, nested ones included (JSON would turn a tuple into a
list, and Inductor prints ``cpp.cxx`` into its error: the failure's text would change with it).
"""

from __future__ import annotations

import ast
import difflib
import math
from contextlib import ExitStack
from typing import Any

from .errors import UsageError

MODULES = {
    "inductor": "torch._inductor.config",
    "dynamo": "torch._dynamo.config",
    "functorch": "torch._functorch.config",
}


def parse_config(items: list[str] | None) -> dict[str, str]:
    """Split ``KEY=VALUE`` strings; needs no torch."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config {item!r}: expected KEY=VALUE, e.g. cpp.inject_relu_bug_TESTING_ONLY=accuracy")
        out[key.strip()] = value.strip()
    return out


def config_keys(module: Any) -> dict[str, Any]:
    """Every setting of a torch config module, by dotted name (the one private-ish API used here)."""
    return module.get_config_copy()


def _coerce(key: str, raw: str, current: Any) -> Any:
    low = raw.lower()
    if isinstance(current, bool):
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise UsageError(f"--config {key}={raw}: expected a boolean (true/false)")
    if low in ("none", "null") and not isinstance(current, str):
        return None
    if isinstance(current, int | float) and not isinstance(current, bool):
        try:
            value = type(current)(raw)
        except ValueError:
            raise UsageError(f"--config {key}={raw}: expected a {type(current).__name__}") from None
        if isinstance(value, float) and value != value:
            raise UsageError(f"--config {key}={raw}: expected a number, not NaN")
        return value
    if isinstance(current, list | tuple | dict | set):
        kind = type(current).__name__
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise UsageError(f"--config {key}={raw}: expected a Python {kind} literal") from None
        sequences = (list, tuple, set, frozenset)
        if isinstance(current, dict) and not isinstance(value, dict):
            raise UsageError(f"--config {key}={raw}: expected a dict, e.g. {{'a': 1}}")
        if isinstance(current, sequences) and not isinstance(value, sequences):
            raise UsageError(f"--config {key}={raw}: expected a {kind}, e.g. {'[1, 2]' if kind == 'list' else '(1, 2)'}")
        return type(current)(value) if isinstance(current, sequences) else value
    if current is None:
        try:
            return ast.literal_eval(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return raw
    return raw


def literal(value: Any) -> str:
    """``value`` as Python literal text that :func:`from_literal` reads back as the same value and types
    (``inf`` is written ``1e999``, which a literal may say and ``repr`` does not)."""
    if isinstance(value, float) and value in (math.inf, -math.inf):
        return "1e999" if value > 0 else "-1e999"
    if isinstance(value, tuple):
        items = [literal(v) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, list):
        return f"[{', '.join(literal(v) for v in value)}]"
    if isinstance(value, set | frozenset):
        # a frozenset has no literal and comes back a set (no torch setting holds one today)
        return f"{{{', '.join(sorted(literal(v) for v in value))}}}" if value else "set()"
    if isinstance(value, dict):
        return f"{{{', '.join(f'{literal(k)}: {literal(v)}' for k, v in value.items())}}}"
    return repr(value)


def from_literal(text: str) -> Any:
    """The value :func:`literal` wrote."""
    return ast.literal_eval(text)


def resolve(cfg: dict[str, str]) -> list[tuple[Any, str, Any]]:
    """(config module, key, typed value) for each setting; UsageError for unknown keys."""
    import importlib

    modules = {name: importlib.import_module(path) for name, path in MODULES.items()}
    keys = {name: config_keys(m) for name, m in modules.items()}
    out = []
    for key, raw in cfg.items():
        prefix, _, rest = key.partition(".")
        if prefix in modules and rest in keys[prefix]:
            candidates = [(prefix, rest)]
        else:
            candidates = [(n, key) for n in ("inductor", "dynamo", "functorch") if key in keys[n]]
        if not candidates:
            every = [k for ks in keys.values() for k in ks]
            close = difflib.get_close_matches(rest if prefix in modules else key, every, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UsageError(f"--config {key}: no such setting in torch._inductor.config or torch._dynamo.config{hint}")
        name, k = candidates[0]
        out.append((modules[name], k, _coerce(key, raw, keys[name][k])))
    return out


def apply_config(cfg: dict[str, str]) -> ExitStack:
    """Apply the settings; closing the returned stack restores them."""
    stack = ExitStack()
    for module, key, value in resolve(cfg):
        stack.enter_context(module.patch({key: value}))
    return stack
