"""Which backend the script compiled a graph with, as a record can carry it: a name torch registers
travels by name; a backend that is code (the script's function, an ``aot_autograd(...)`` object, a
callable object) travels as where it lives, ``FILE.py:QUALNAME``, what a tool's ``--backend`` takes:
a stream never makes a tool import code, so the user hands it over.

Runs inside the user's interpreter: stdlib + torch only (torch's registry read where torch is imported),
a leaf of the boot's layers. Guarantees: never raises (capture must not break the script):
:func:`describe` falls back to the name alone. Not guaranteed: a name a tool can load for a backend that
no module-level name is bound to (an object made inside a function): it is written ``<TYPE object>``,
and a tool asks the user for it.
"""

from __future__ import annotations

import sys
import types
from typing import Any


def registered(name: str) -> Any:
    """What torch.compile(backend=NAME) resolves NAME to here (``lookup_backend``), or None where torch
    registers no such name."""
    try:
        from torch._dynamo.backends.registry import lookup_backend

        return lookup_backend(name)
    except Exception:
        return None


def describe(backend: Any, name: Any, fallback: str) -> tuple[str, str | None, bool]:
    """(name, code, in_script) of the backend Dynamo was handed: ``backend`` as ``wrap_backend_debug``
    got it (torch.compile's wrapper, or the user's callable), ``name`` its compiler name, ``fallback``
    the name the boot gives it otherwise. ``code`` is None for a name torch registers, unless the
    script registered it itself (its function lives in ``__main__``: no other process has it)."""
    try:
        kind = type(backend).__name__
        if kind == "_TorchCompileInductorWrapper":
            return "inductor", None, False
        fn = getattr(backend, "compiler_fn", backend) if kind == "_TorchCompileWrapper" else backend
        main = sys.modules.get("__main__")
        if isinstance(name, str) and registered(name) is fn and sys.modules.get(getattr(fn, "__module__", "")) \
                is not main:
            return name, None, False
        file, qual, module = _where(fn, main)
        label = qual if qual.isidentifier() else ("aot_autograd" if type(fn).__name__ == "AotAutograd" else fallback)
        return label, f"{file}:{qual}", module is main
    except Exception:
        return fallback, None, False


def _where(fn: Any, main: Any) -> tuple[str, str, Any]:
    """(file, qualname, module) of a backend that is code: a function by its own qualname; an object by
    the module-level name bound to it in the module of a function it holds (as ``aot_autograd``'s
    ``fw_compiler``), else in the script, else ``<TYPE object>``: reachable by no name. The module it
    was made in comes first: an object the script imported is also bound in the script, and loading
    the script to reach it would run the script (its training loop) again."""
    if isinstance(fn, (types.FunctionType, type)):
        module = sys.modules.get(fn.__module__)
        return _file(module), fn.__qualname__, module
    homes = [*(sys.modules.get(getattr(v, "__module__", "")) for v in _held(fn)), main]
    for module in dict.fromkeys(m for m in homes if m is not None):
        for key, value in list(vars(module).items()):
            if value is fn and key.isidentifier():
                return _file(module), key, module
    module = next((m for m in homes if m is not None), main)  # where the functions it holds are defined
    return _file(module), f"<{type(fn).__name__} object>", module


def _held(fn: Any) -> list[Any]:
    """The functions a callable object holds: ``aot_autograd``'s kwargs, a partial's func."""
    out = [v for v in (getattr(fn, "kwargs", None) or {}).values() if isinstance(v, types.FunctionType)]
    return out + [v for v in (getattr(fn, "func", None),) if isinstance(v, types.FunctionType)]


def _file(module: Any) -> str:
    """The module's file as an absolute path; ``<string>`` for a ``python -c`` script's, which has none."""
    import os

    path = getattr(module, "__file__", None)
    return os.path.abspath(path) if path else "<string>"


DECOMPOSITION = "decomposition:"  # a code_settings key: an op's decomposition in Inductor's table


def code_settings() -> dict[str, str]:
    """The code the script installed into the compiler, as where it lives (``FILE.py:QUALNAME``, what a
    tool's ``--config KEY=FILE.py:NAME`` or ``--backend`` takes): each Inductor hook setting holding code
    (``{"inductor.post_grad_custom_post_pass": "/abs/train.py:corrupt"}``), and each decomposition in
    Inductor's table defined outside torch (``{"decomposition:aten.silu.default": "/abs/train.py:wrong_silu"}``).
    A stream carries these as names only: no tool imports them because a record says so. Never raises."""
    out: dict[str, str] = {}
    main = sys.modules.get("__main__")
    config = sys.modules.get("torch._inductor.config")
    # a hook is a setting torch's repro writer leaves out (``_save_config_ignore``) holding something callable
    for key in list(getattr(config, "_save_config_ignore", ())):
        try:
            value = getattr(config, key, None) if config is not None else None
            if value is not None and callable(value):
                file, qual, _ = _where(value, main)
                out[f"inductor.{key}"] = f"{file}:{qual}"
        except Exception:
            continue
    table = getattr(sys.modules.get("torch._inductor.decomposition"), "decompositions", None)
    try:
        for op, fn in list((table or {}).items()):
            home = _home(fn)
            if home != "torch" and not home.startswith("torch."):
                file, qual, _ = _where(fn, main)
                out[f"{DECOMPOSITION}{op}"] = f"{file}:{qual}"
    except Exception:
        pass
    return out


def _home(fn: Any) -> str:
    """The module that defines a callable: a partial's function's (torch fills its tables with partials of
    its own functions; a partial's ``__module__`` is functools'), an object's class's."""
    while hasattr(fn, "func") and not isinstance(fn, types.FunctionType):
        fn = fn.func
    home = fn.__module__ if isinstance(fn, types.FunctionType) else type(fn).__module__
    return home or ""
