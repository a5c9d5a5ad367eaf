from __future__ import annotations

import pytest
from fxtest import fxcheck_in


@pytest.fixture
def fxcheck(tmp_path):
    def go(*args: str, env: dict | None = None, stdin: bytes | None = None):
        return fxcheck_in(tmp_path, *args, store=tmp_path / "store", env=env, stdin=b"" if stdin is None else stdin)

    return go


def pytest_configure(config):
    # pytest-xdist --dist loadgroup keeps tests sharing one module fixture (one slow tool run) on one worker
    config.addinivalue_line("markers", "xdist_group(name): tests that share a module fixture run on one xdist worker")
