"""A Python file run as a module, and ``FILE.py:NAME`` names in it: what a model file, a ``--backend
FILE.py:NAME`` and a ``--config HOOK=FILE.py:NAME`` (a compiler pass) are loaded by. A leaf: it imports
nothing of the runtime but its errors and :mod:`.toplevel` (a leaf too, the rule a backend's file is
loaded under), so the config module can load a hook without importing modelfile.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

from .errors import ModelFileError

__all__ = ["backend_callable", "check_code", "exec_file", "parse_spec"]


def parse_spec(spec: str) -> tuple[Path, str | None]:
    """``FILE.py`` or ``FILE.py:NAME``."""
    path, entry = spec, None
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isidentifier() and head:
        path, entry = head, tail
    return Path(path), entry


def exec_file(path: Path, role: str = "the model file", hint: str = "") -> Any:
    """Import a Python file as a module (its directory on sys.path); any failure is a ModelFileError, naming
    the file as ``role`` (what it was loaded as) and ending with ``hint`` where its code raised."""
    name = "pt2kit_model_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    # Always as source: a file named *.pyc or *.so is never run as bytecode or as an extension.
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    if spec is None or spec.loader is None:
        raise ModelFileError(f"{path}: cannot be loaded as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    sys.path.insert(0, str(path.parent))  # so the file can import its neighbours
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        if "null bytes" in str(e.msg):  # a binary file, on Python 3.12+
            raise ModelFileError(f"{path}: not Python source (it holds NUL bytes)") from None
        raise ModelFileError(f"{e.filename or path}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:
        if isinstance(e, ValueError) and "null bytes" in str(e):  # a binary file, on Python 3.11
            raise ModelFileError(f"{path}: not Python source (it holds NUL bytes)") from None
        line = _user_line(e, path)
        raise ModelFileError(f"{line}: loading {role} raised {type(e).__name__}: {e}{hint}") from None
    return module


def _user_line(e: BaseException, path: Path) -> str:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename) == path]
    return f"{path}:{frames[-1].lineno}" if frames else str(path)


def check_code(spec: str, flag: str, noun: str = "backend") -> None:
    """(3.1) What can be known of ``FILE.py:NAME`` or ``module:attr`` (given as ``flag``) without running
    any of it: the shape, the file, the script rule (:func:`.toplevel.unguarded`). Torch-free: a tool's
    parent asks it while it checks its options, so a typo is exit 2 before anything runs or is said;
    :func:`backend_callable` asks it first, so both say the one line. A module is not looked for here: the
    worker's import path is not the parent's."""
    from .errors import UsageError
    from .toplevel import unguarded

    head, _, attr = spec.rpartition(":")
    if not head or not attr.isidentifier():
        raise UsageError(f"{flag} {spec}: expected FILE.py:NAME or module:attr")
    if head.endswith(".py"):
        path = Path(head)
        if not path.is_file():
            raise UsageError(f"{flag} {spec}: no such file {path}")
        # importing a script whose own run is not under a __main__ guard would run it again, in every worker
        refused = unguarded(path, attr, flag.strip(), noun)
        if refused:
            raise UsageError(f"{flag} {spec}: {refused}")


def backend_callable(spec: str, flag: str, what: str = "torch.compile backend",
                     settings: dict[str, str] | None = None) -> Any:
    """The torch.compile backend that ``FILE.py:NAME`` or ``module:attr`` names (given on the command
    line, as ``flag``; a stream never names one): a ModelFileError/UsageError in one line otherwise. A
    ``FILE.py`` whose top level runs more than definitions (:func:`.toplevel.runs_at_import`: a script whose
    run has no ``__main__`` guard) is refused before any of it runs, its one line saying how to hand the
    backend over instead: loading it would run the script again in every worker. What the
    file's top level does to the compiler's settings and Inductor's decomposition table is put back
    (pt2kit_portable's kept_compiler_state, as minify's repro loads it): a script that sets
    ``post_grad_custom_post_pass = corrupt`` there is handed over for its pass, which runs where a
    ``--config`` applies it, not in every later compile of the process.

    ``settings`` (2.30): filled with the settings the file's top level set (as pt2kit_portable's
    collect_settings writes them, those a repro can carry), for the caller to
    compile under, as importing the file does in the user's script; put back all the same."""
    import importlib

    from pt2kit_portable import kept_compiler_state

    from .errors import UsageError

    def now() -> dict[str, str]:  # as config.worker_settings collects them (not imported: it imports us)
        from pt2kit_portable import CONFIG_MODULES, collect_settings

        return collect_settings({name: importlib.import_module(path) for name, path in CONFIG_MODULES.items()})

    def load(run: Any) -> Any:
        with kept_compiler_state():
            if settings is None:
                return run()
            before = now()
            obj = run()
            settings.update({k: v for k, v in now().items() if before.get(k) != v})
            return obj

    head, _, attr = spec.rpartition(":")
    check_code(spec, flag, "backend" if flag.strip() == "--backend" else "code")
    if head.endswith(".py"):
        path = Path(head)
        # what the rule let through (definitions) can still raise: said as the backend's file's, not a model file's
        hint = f" (its top level runs when {flag} loads it for {attr}: put the script's own run under " \
               "`if __name__ == \"__main__\":`, or the backend in a file of its own)"
        obj = load(lambda: getattr(exec_file(path.resolve(), f"{path.name} for {flag}", hint), attr, None))
    else:
        try:
            obj = load(lambda: getattr(importlib.import_module(head), attr, None))
        except ImportError as e:
            raise UsageError(f"{flag} {spec}: cannot import {head}: {e}") from None
    if obj is None or not callable(obj):
        raise UsageError(f"{flag} {spec}: `{attr}` is not a callable {what}")
    return obj
