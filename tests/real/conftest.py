"""Run pt2kit's tools on real models as a user would, and PyTorch's own checks on the same models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

MODELS = Path(__file__).parent / "models"


class Run:
    def __init__(self, p: subprocess.CompletedProcess) -> None:
        self.code = p.returncode
        self.stderr = p.stderr.decode()
        self.records = [msgspec.json.decode(x) for x in p.stdout.splitlines()]

    def kind(self, k: str) -> list[dict]:
        return [r for r in self.records if r["kind"] == k]


@pytest.fixture(scope="session")
def tool(tmp_path_factory):
    """``tool("kdiff", model, *args)``: one run of a tool, cached for the session."""
    tmp = tmp_path_factory.mktemp("real")
    cache: dict[tuple[str, ...], Run] = {}

    def run(name: str, *args: str) -> Run:
        key = (name, *args)
        if key not in cache:
            env = dict(os.environ, PT2KIT_STORE=str(tmp / "store"))
            p = subprocess.run([sys.executable, "-m", f"pt2kit.{name}", *args], input=b"", capture_output=True,
                               env=env, cwd=tmp, timeout=900)
            cache[key] = Run(p)
        return cache[key]

    return run


def model(name: str) -> str:
    return str(MODELS / f"{name}.py")


def pytest_configure(config):
    # tests that share one slow run carry it: `nox` runs pytest-xdist with --dist loadgroup, which keeps a
    # group on one worker; registered here so a plain pytest without xdist knows the mark too
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
