"""Run pt2kit's tools on real models as a user would, and PyTorch's own checks on the same models."""

from __future__ import annotations

from pathlib import Path

import pytest

from pt2kit.testkit import Result, module, run, start_env

MODELS = Path(__file__).parent / "models"


@pytest.fixture(scope="session")
def tool(tmp_path_factory):
    """``tool("kdiff", model, *args)``: one run of a tool, cached for the session."""
    tmp = tmp_path_factory.mktemp("real")
    cache: dict[tuple[str, ...], Result] = {}

    def go(name: str, *args: str) -> Result:
        key = (name, *args)
        if key not in cache:
            env = start_env(PT2KIT_STORE=str(tmp / "store"))
            cache[key] = run(module(f"pt2kit.{name}", *args), env=env, cwd=tmp, timeout=900)
        return cache[key]

    return go


def model(name: str) -> str:
    return str(MODELS / f"{name}.py")


def pytest_configure(config):
    # tests that share one slow run carry it: `nox` runs pytest-xdist with --dist loadgroup, which keeps a
    # group on one worker; registered here so a plain pytest without xdist knows the mark too
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
    # `nox -s real` (the test command) runs `-m "not slow"`; `nox -s real_slow` the rest
    config.addinivalue_line("markers", "slow: a slow repeat of what a faster real model shows: nox -s real_slow")
