"""minify's test helpers, a module of their own (not conftest.py): the test command runs every package's tests
in one pytest, where each folder's conftest.py is a different module and ``from conftest import`` would find the
first one on sys.path, not this folder's."""

import os
import re
import subprocess
from pathlib import Path

from pt2kit.testkit import Result, module, run, run_alone

MODELS = Path(__file__).parent / "models"


def minify_in(cwd: Path, *args: str, store: Path, stdin: bytes | None = None, timeout: float = 400) -> Result:
    """``python -m pt2kit.minify args --store store`` in ``cwd``."""
    return run(module("pt2kit.minify", *args, "--store", str(store)), stdin=b"" if stdin is None else stdin,
               cwd=cwd, timeout=timeout)


def run_repro(path: Path, **env: str) -> subprocess.CompletedProcess:
    """The repro run alone (pt2kit and pt2kit_portable not importable: it needs torch alone), with ``env``
    added to the test's environment."""
    return run_alone(path, {**os.environ, **env})


def switch_off(path: Path, pattern: str, replacement: str) -> None:
    """The repro's first line matching ``pattern`` rewritten (the planted bug switched off): it must be there."""
    text = path.read_text()
    new = re.sub(pattern, replacement, text, count=1)
    assert new != text
    path.write_text(new)


def cannot_test(p: subprocess.CompletedProcess, why: str) -> None:
    """Exit 125 (git bisect run's "cannot test this revision"), nothing on stdout, one line on stderr."""
    assert p.returncode == 125 and p.stdout == "", p.stdout + p.stderr
    assert p.stderr.startswith(f"repro: cannot test here: {why}") and len(p.stderr.splitlines()) == 1, p.stderr
