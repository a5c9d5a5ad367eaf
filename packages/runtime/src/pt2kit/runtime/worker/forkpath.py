"""Whether the fork server may serve a tool whose PYTHONPATH is not its own, and the ``sys.path`` its child
then takes: a test or a tool that puts a folder of its own on PYTHONPATH (a script's, a helper module's) was
refused and paid a fresh Python's imports (27 times in one run of the test command).

Guarantees: where :func:`refusal` says None, the child's ``sys.path`` (:func:`child_path`) holds the entries a
fresh Python started in the tool's folder with the tool's PYTHONPATH would hold, in its order, and no module
the server imported would have been found elsewhere by that Python. It refuses (and names the entry) where an
entry the tool adds holds a module Python imports at startup (sitecustomize, usercustomize: a fork never runs
it) or one named as a module the server imported (the tool's copy would have been found first), where an
entry the tool drops is one the server imported from, and where two shared entries change places. Not
guaranteed: a module that appears in an entry after the check, or a namespace package split across entries.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

VAR = "PYTHONPATH"
STARTUP = frozenset({"sitecustomize", "usercustomize"})  # imported by Python's site module at startup


def entries(env: Mapping[str, str], cwd: str) -> list[str]:
    """The ``sys.path`` entries Python makes of ``env``'s PYTHONPATH when started in ``cwd``: each absolute,
    an empty one the folder itself."""
    raw = env.get(VAR)
    return [os.path.abspath(os.path.join(cwd, p)) if p else cwd for p in raw.split(os.pathsep)] if raw else []


def refusal(mine: list[str], theirs: list[str]) -> str | None:
    """Why a child with the PYTHONPATH entries ``theirs`` cannot be forked from this server, started with
    ``mine``; None where it can."""
    if theirs == mine:
        return None
    if sys.path[1:1 + len(mine)] != mine:
        return "another PYTHONPATH (the server's sys.path is not as it started)"
    shared = [e for e in theirs if e in mine]
    if shared != [e for e in mine if e in theirs]:
        return "another PYTHONPATH (its entries in another order)"
    if dropped := set(mine) - set(theirs):  # each imported module's file read only where an entry is dropped
        files = [f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)]
        for entry in dropped:
            if any(f.startswith(entry.rstrip(os.sep) + os.sep) for f in files):
                return f"another PYTHONPATH (the server imported from {entry})"
    imported = {name for name in sys.modules if "." not in name}
    for entry in dict.fromkeys(e for e in theirs if e not in mine):
        names = _module_names(entry)
        if hit := sorted(names & STARTUP) or sorted(names & imported):
            return f"another PYTHONPATH ({entry} holds {hit[0]})"
    return None


def child_path(mine: list[str], theirs: list[str]) -> None:
    """In the child: ``sys.path``'s PYTHONPATH entries (after ``sys.path[0]``) made ``theirs``."""
    sys.path[1:1 + len(mine)] = theirs


def _module_names(folder: str) -> set[str]:
    """The top-level names a folder on ``sys.path`` offers (``x.py``, ``x/``, ``x.cpython-311-….so``: ``x``)."""
    try:
        return {name.split(".")[0] for name in os.listdir(folder)}
    except OSError:  # a missing entry offers nothing, to a fresh Python too
        return set()
