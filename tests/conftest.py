"""The e2e tests' and the real-model tests' (tests/real) one conftest: their fixtures and marks. What the tests
import lives in e2ekit.py: the test command runs every package's tests with these in one pytest, where each
folder's conftest.py is a module of its own."""

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
