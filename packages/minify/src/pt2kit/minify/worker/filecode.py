"""The code a model file's top level installs into the compiler, as minify carries it into every candidate and
the repro: an Inductor hook setting (``torch._inductor.config.post_grad_custom_post_pass = corrupt``) and a
decomposition put into Inductor's decomposition table (``decompositions[aten.silu.default] = wrong_silu``).

minify's worker runs the model file, so its original run compiles with them; the candidates, judged under the
config the search carries, and the repro, a file of its own, would not (before: "the accuracy failure does not
reproduce", exit 3, and nothing for the bisection to find). Each is carried as a script's pass is when handed
over as ``--config KEY=FILE.py:NAME``: by where it lives, ``("pt2kit:code", FILE, NAME)``, loaded from that file
where it is applied (:mod:`..judge.loading`); a decomposition under the config's :data:`..judge.loading.DECOMPOSITIONS` key.
Code no module-level name of a file reaches (a lambda, a closure) cannot travel: one line naming it and what to
do, exit 2, never a verdict that the bug is not there. A ``--config`` of the same hook wins.
"""

from __future__ import annotations

import sys
from typing import Any

from pt2kit.runtime.common.config import MODULES, is_hook, literal
from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.shims.torchapi import config_module
from pt2kit_portable import inductor_decompositions

from ..judge.loading import CODE, DECOMPOSITIONS


def before() -> dict[str, Any]:
    """What the compiler holds now: each hook setting's value, Inductor's table's entries (taken before the
    model file runs, so what it installs is what changed)."""
    return {"hooks": {(p, k): v for p, _, k, v in _hooks()}, "table": dict(inductor_decompositions() or {})}


def installed(seen: dict[str, Any], label: str, given: dict[str, str]) -> dict[str, dict[str, str]]:
    """{config module: {key: the literal of ("pt2kit:code", FILE, NAME)}} of what the model file ``label`` installed
    since ``seen`` (:func:`before`), hooks ``given`` (the command line's --config) sets left to it; UsageError, one
    line, for code no name reaches or an entry it removed."""
    out: dict[str, dict[str, str]] = {}
    for prefix, module, key, value in _hooks():
        if value is None or value is seen["hooks"].get((prefix, key)) or key in given or f"{prefix}.{key}" in given:
            continue
        where = _where(value)
        if where is None:
            raise UsageError(f"{label}: its top level sets {prefix}.{key} to {_what(value)}, code no module-level name "
                             "reaches, which minify cannot carry into its candidates and repro: bind it to a name "
                             f"in a file (NAME = ...), which minify then carries, or give --config {key}=FILE.py:NAME")
        out.setdefault(module.__name__, {})[key] = literal((CODE, *where))
    table = inductor_decompositions() or {}
    for op in [op for op in seen["table"] if op not in table]:
        raise UsageError(f"{label}: its top level removes Inductor's decomposition of {op}, which minify cannot carry "
                         "into its candidates and repro: remove it in a backend of yours that then compiles "
                         "with Inductor, and give --backend FILE.py:NAME")
    for op, fn in table.items():
        if seen["table"].get(op) is fn:
            continue
        where = _where(fn)
        if where is None:
            raise UsageError(f"{label}: its top level puts {_what(fn)} into Inductor's decomposition table for {op}, "
                             "code no module-level name reaches, which minify cannot carry into its candidates and "
                             "repro: bind it to a name in a file (NAME = ...), which minify then carries")
        out.setdefault(DECOMPOSITIONS, {})[str(op)] = literal((CODE, *where))
    return out


def _hooks() -> list[tuple[str, Any, str, Any]]:
    """(prefix, config module, key, value) of every hook setting (:func:`pt2kit.runtime.common.config.is_hook`)."""
    out = []
    for prefix, path in MODULES.items():
        module = config_module(path)
        for key in getattr(module, "_save_config_ignore", ()):
            if is_hook(module, key):
                out.append((prefix, module, key, getattr(module, key, None)))
    return out


def _where(obj: Any) -> tuple[str, str] | None:
    """(file, module-level name) that reaches ``obj`` in the module that defines it (a function's own, an
    object's class's), as the repro loads it again; None where no name of a file does."""
    home = getattr(obj, "__module__", None) or type(obj).__module__
    module = sys.modules.get(home or "")
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return None
    name = next((k for k, v in list(vars(module).items()) if v is obj and k.isidentifier()), None)
    return (path, name) if name else None


def _what(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or f"a {type(obj).__name__} object"
