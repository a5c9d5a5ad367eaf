"""What the e2e tests and tests/real import (not conftest.py: the test command runs every package's tests with
them in one pytest, where ``from conftest import`` would find another folder's conftest first)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def user_env(**extra: str) -> dict[str, str]:
    """The environment a user's shell hands the tools: this run's own, with this interpreter's folder first on
    PATH (where `pt2kit`, `kdiff` and `minify` are found), less our and pytest's variables, plus ``extra``.
    Not a bare one: the run's fork server (pt2kit.runtime.worker.forkserver, which nox starts around pytest) forks a
    tool's workers and repro runs only for the environment it imported torch under, and a bare environment
    started each afresh (4-5 s of imports each on 2 cores). PT2KIT_FORKSERVER stays, naming it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT2KIT", "PYTEST_")) or k == "PT2KIT_FORKSERVER"}
    bindir = str(Path(sys.executable).parent)
    path = env.get("PATH", "/usr/bin:/bin")
    env["PATH"] = path if path.split(os.pathsep)[0] == bindir else os.pathsep.join([bindir, path])
    return {**env, **extra}
