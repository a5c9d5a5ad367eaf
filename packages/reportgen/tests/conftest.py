from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.fixture
def reportgen(tmp_path):
    def run(*args: str, stdin: bytes = b"", env: dict | None = None) -> subprocess.CompletedProcess:
        e = dict(os.environ, PT2KIT_STORE=str(tmp_path / "nostore"))
        e.update(env or {})
        return subprocess.run([sys.executable, "-m", "pt2kit.reportgen", *args], input=stdin, capture_output=True,
                              env=e, cwd=tmp_path, timeout=300)

    return run
