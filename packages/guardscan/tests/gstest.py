"""guardscan's test helpers, a module of their own (not conftest.py): the test command runs every package's tests
in one pytest, where each folder's conftest.py is a different module and ``from conftest import`` would find the
first one on sys.path, not this folder's."""

from __future__ import annotations

import os
from pathlib import Path

from pt2kit.testkit import Result, module, run

MODELS = Path(__file__).parent / "models"


def guardscan_in(cwd: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> Result:
    """``python -m pt2kit.guardscan args`` in ``cwd``, its store under it."""
    e = dict(os.environ, PT2KIT_STORE=str(cwd / "store"), **(env or {}))
    return run(module("pt2kit.guardscan", *args), stdin=b"" if stdin is None else stdin, env=e, cwd=cwd)
