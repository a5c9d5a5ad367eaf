from __future__ import annotations

from pathlib import Path

import pytest

from pt2kit.testkit import Result, module, run, start_env

MODELS = Path(__file__).parent / "models"


def kdiff_in(cwd: Path, *args: str, stdin: bytes | None = None, timeout: float = 600) -> Result:
    """``python -m pt2kit.kdiff args`` in ``cwd``, its store under it."""
    env = start_env(PT2KIT_STORE=str(cwd / "store"))
    return run(module("pt2kit.kdiff", *args), stdin=b"" if stdin is None else stdin, env=env, cwd=cwd, timeout=timeout)


@pytest.fixture
def kdiff(tmp_path):
    def go(*args: str, stdin: bytes | None = None) -> Result:
        return kdiff_in(tmp_path, *args, stdin=stdin)

    return go


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
