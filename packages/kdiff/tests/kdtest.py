"""kdiff's test helpers, a module of their own (not conftest.py): the test command runs every package's tests
in one pytest, where each folder's conftest.py is a different module and ``from conftest import`` would find the
first one on sys.path, not this folder's."""

from __future__ import annotations

from pathlib import Path

from pt2kit.testkit import Result, module, run, start_env

MODELS = Path(__file__).parent / "models"


def kdiff_in(cwd: Path, *args: str, stdin: bytes | None = None, timeout: float = 600) -> Result:
    """``python -m pt2kit.kdiff args`` in ``cwd``, its store under it."""
    env = start_env(PT2KIT_STORE=str(cwd / "store"))
    return run(module("pt2kit.kdiff", *args), stdin=b"" if stdin is None else stdin, env=env, cwd=cwd, timeout=timeout)
