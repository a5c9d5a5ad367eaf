"""The e2e tests' and the real-model tests' (tests/real) one conftest: `nox -s e2e` runs both folders in one
pytest, and a second conftest.py there would be a second module named ``conftest`` (the tests import
:func:`user_env` from this one)."""

from __future__ import annotations

import pytest

from pt2kit.testkit import Result, module, run, start_env


def pytest_configure(config):
    # tests that share one slow run carry it: `nox` runs pytest-xdist with --dist loadgroup, which keeps a
    # group on one worker; registered here so a plain pytest without xdist knows the mark too
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
    # the test command runs `-m "not slow"`; `nox -s real_slow` the rest
    config.addinivalue_line("markers", "slow: a slow repeat of what a faster real model shows: nox -s real_slow")


@pytest.fixture(scope="session")
def tool(tmp_path_factory):
    """``tool("kdiff", model, *args)``: one run of a tool, cached for the session (tests/real)."""
    tmp = tmp_path_factory.mktemp("real")
    cache: dict[tuple[str, ...], Result] = {}

    def go(name: str, *args: str) -> Result:
        key = (name, *args)
        if key not in cache:
            env = start_env(PT2KIT_STORE=str(tmp / "store"))
            cache[key] = run(module(f"pt2kit.{name}", *args), env=env, cwd=tmp, timeout=900)
        return cache[key]

    return go


def user_env(**extra: str) -> dict[str, str]:
    """The environment a user's shell hands the tools: this run's own, with this interpreter's folder first on
    PATH (where `pt2kit`, `kdiff` and `minify` are found), less our and pytest's variables, plus ``extra``.
    Not a bare one: the run's fork server (pt2kit.runtime.forkserver, which nox starts around pytest) forks a
    tool's workers and repro runs only for the environment it imported torch under, and a bare environment
    started each afresh (4-5 s of imports each on 2 cores). PT2KIT_FORKSERVER stays, naming it."""
    import os
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT2KIT", "PYTEST_")) or k == "PT2KIT_FORKSERVER"}
    bindir = str(Path(sys.executable).parent)
    path = env.get("PATH", "/usr/bin:/bin")
    env["PATH"] = path if path.split(os.pathsep)[0] == bindir else os.pathsep.join([bindir, path])
    return {**env, **extra}
