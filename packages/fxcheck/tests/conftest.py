from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import msgspec
import pytest


@dataclass
class Result:
    code: int
    stdout: bytes
    stderr: str

    @property
    def records(self) -> list[dict]:
        return [msgspec.json.decode(line) for line in self.stdout.splitlines()]

    def kind(self, kind: str) -> list[dict]:
        return [r for r in self.records if r["kind"] == kind]


@pytest.fixture
def fxcheck(tmp_path):
    def run(*args: str, env: dict | None = None, stdin: bytes | None = None) -> Result:
        e = dict(os.environ, PT2KIT_STORE=str(tmp_path / "store"))
        for k in [k for k in e if k.startswith(("PT2KIT_", "MOCK_")) and k != "PT2KIT_STORE"]:
            del e[k]
        e.update(env or {})
        p = subprocess.run([sys.executable, "-m", "pt2kit.fxcheck", *args], input=stdin, capture_output=True, env=e,
                           cwd=tmp_path, timeout=600)
        return Result(p.returncode, p.stdout, p.stderr.decode())

    return run


def pytest_configure(config):
    # pytest-xdist --dist loadgroup keeps tests sharing one module fixture (one slow tool run) on one worker
    config.addinivalue_line("markers", "xdist_group(name): tests that share a module fixture run on one xdist worker")
