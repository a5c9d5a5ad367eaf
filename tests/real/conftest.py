"""Run pt2kit's tools on real models as a user would, and PyTorch's own checks on the same models."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pt2kit.testkit import Result, module, run

MODELS = Path(__file__).parent / "models"
# The environment the run started with. An Inductor compile in this process (the tests' own verdicts: _truth,
# same()) writes into os.environ (TORCHINDUCTOR_CACHE_DIR where unset; _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR,
# an address in this process): a tool or repro given that environment is one the fork server refuses, and each
# started a fresh Python (in one `real` run: forked 0, refused 42). Tools and repros get the user's environment.
START_ENV = dict(os.environ)


@pytest.fixture(scope="session")
def tool(tmp_path_factory):
    """``tool("kdiff", model, *args)``: one run of a tool, cached for the session."""
    tmp = tmp_path_factory.mktemp("real")
    cache: dict[tuple[str, ...], Result] = {}

    def go(name: str, *args: str) -> Result:
        key = (name, *args)
        if key not in cache:
            env = dict(START_ENV, PT2KIT_STORE=str(tmp / "store"))
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
