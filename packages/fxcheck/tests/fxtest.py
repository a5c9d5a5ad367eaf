"""Helpers the fxcheck tests share (a uniquely named module: the repo's test suites run together)."""

from __future__ import annotations

import os
from pathlib import Path

from pt2kit.testkit import Result, module, run

MODELS = Path(__file__).parent / "models"


def model(name: str) -> str:
    return str(MODELS / name)


def fxcheck_in(cwd: Path, *args: str, store: Path, env: dict | None = None, stdin: bytes = b"") -> Result:
    """``python -m pt2kit.fxcheck args`` in ``cwd`` with the store given and no other PT2KIT_/MOCK_ setting
    of the test run's environment."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("PT2KIT_", "MOCK_"))}
    e["PT2KIT_STORE"] = str(store)
    e.update(env or {})
    return run(module("pt2kit.fxcheck", *args), stdin=stdin, env=e, cwd=cwd)
