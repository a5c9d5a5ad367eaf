from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

MODELS = Path(__file__).parent / "models"


class Result:
    def __init__(self, p: subprocess.CompletedProcess) -> None:
        self.code = p.returncode
        self.stdout = p.stdout
        self.stderr = p.stderr.decode()
        self.records = [msgspec.json.decode(x) for x in p.stdout.splitlines()]

    def kind(self, k: str) -> list[dict]:
        return [r for r in self.records if r["kind"] == k]


@pytest.fixture
def guardscan(tmp_path):
    def run(*args: str, stdin: bytes | None = None, pipe_from: str | None = None) -> Result:
        env = dict(os.environ, PT2KIT_STORE=str(tmp_path / "store"))
        cmd = [sys.executable, "-m", "pt2kit.guardscan", *args]
        p = subprocess.run(cmd, input=stdin if stdin is not None else b"", capture_output=True, env=env,
                           cwd=tmp_path, timeout=600)
        return Result(p)

    return run


def pytest_configure(config):
    # tests that share one slow run carry it: `nox` runs pytest-xdist with --dist loadgroup, which keeps a
    # group on one worker; registered here so a plain pytest without xdist knows the mark too
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
