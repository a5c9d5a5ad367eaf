from __future__ import annotations

import os
from pathlib import Path

import pytest

from pt2kit.testkit import Result, module, run

MODELS = Path(__file__).parent / "models"


def guardscan_in(cwd: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> Result:
    """``python -m pt2kit.guardscan args`` in ``cwd``, its store under it."""
    e = dict(os.environ, PT2KIT_STORE=str(cwd / "store"), **(env or {}))
    return run(module("pt2kit.guardscan", *args), stdin=b"" if stdin is None else stdin, env=e, cwd=cwd)


@pytest.fixture
def guardscan(tmp_path):
    def go(*args: str, stdin: bytes | None = None) -> Result:
        return guardscan_in(tmp_path, *args, stdin=stdin)

    return go


def pytest_configure(config):
    # tests that share one slow run carry it: `nox` runs pytest-xdist with --dist loadgroup, which keeps a
    # group on one worker; registered here so a plain pytest without xdist knows the mark too
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
