"""Whose code a file is, for the capture boot: the user's (the script, a library they compiled), or
torch's, this boot's, the standard library's; the user's line that called into compiled code
(:func:`call_site`); the loaded module a file is (:func:`module_of`).

Runs inside the user's interpreter: stdlib only, and no torch API: torch's folder is read from
``sys.modules`` where torch is already imported. Separate from :mod:`pt2kit_capture_torchapi`, which holds
every private torch API the boot uses and asks this module which frames are the user's (Dynamo's traced
code, a node's stack trace): this is path and stack logic alone, so it sits apart from the torch APIs
that change with each release. A leaf of the boot's layers.

Guarantees: never raises on a path it cannot place: it is not the user's. Not guaranteed: a library
installed outside site-packages (an editable install, a folder on ``PYTHONPATH``) is told apart from the
script: it counts as the user's code.
"""

from __future__ import annotations

import os
import sys
import sysconfig


def call_site() -> str | None:
    """``/abs/file.py:LINE`` of the user's own line that called into the compiled code: outward from the
    backend past torch's frames, the first frame that is neither torch's, this boot's, the standard
    library's nor an installed library's (a Hugging Face model's ``generic.py`` wrapper is the library's;
    the script's ``model(**batch)`` is the user's). None where every frame is a library's."""
    frame, in_torch = sys._getframe(1), False
    paths = sysconfig.get_paths()
    libraries = [paths.get(k) for k in ("purelib", "platlib")]
    while frame is not None:
        path = frame.f_code.co_filename
        if in_torch and user_file(path) and not any(is_under(path, d) for d in libraries):
            return f"{os.path.abspath(path)}:{frame.f_lineno}"
        in_torch = in_torch or is_torch_file(path)
        frame = frame.f_back
    return None


def user_file(path: str) -> bool:
    """Whether code in ``path`` is the user's: not torch's, this boot's, nor the standard library's
    (site-packages other than torch's are the user's: a transformers model is what they compiled)."""
    if not path or path.startswith("<frozen") or is_torch_file(path) or is_under(path, os.path.dirname(__file__)):
        return False
    paths = sysconfig.get_paths()
    return not is_under(path, paths.get("stdlib")) or any(is_under(path, paths.get(k)) for k in ("purelib", "platlib"))


def is_torch_file(path: str) -> bool:
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    return bool(torch_file) and is_under(path, os.path.dirname(torch_file))


def is_under(path: str, directory: str | None) -> bool:
    return bool(directory) and os.path.abspath(path).startswith(os.path.join(os.path.abspath(directory), ""))


def module_of(path: str) -> str | None:
    """The name of the loaded module whose file is ``path`` (``__main__`` for the script)."""
    target = os.path.abspath(path)
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and os.path.abspath(f) == target:
            return name
    return None
