"""The sitecustomize capture puts first on PYTHONPATH is parsed by every Python the command starts: python2.7
printed "'import sitecustomize' failed" (issue 55). It is written in the syntax Python 2 and 3 share, does
nothing on Python 2, and on a Python 3 older than the boot's 3.10 only runs the sitecustomize it shadows.
Real processes, no torch."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pt2kit.capture

BOOT = Path(pt2kit.capture.__file__).parent / "boot"
SITE = BOOT / "sitecustomize.py"
PY3_ONLY = (ast.JoinedStr, ast.Nonlocal, ast.YieldFrom, ast.AsyncFunctionDef, ast.Await, ast.NamedExpr,
            ast.Starred, ast.MatMult, ast.Match, ast.AnnAssign)


def test_the_file_is_in_the_syntax_python_2_shares():
    data = SITE.read_bytes()
    assert data.isascii()  # Python 2 wants an encoding line for anything else
    for node in ast.walk(ast.parse(data)):
        assert not isinstance(node, PY3_ONLY), (type(node).__name__, getattr(node, "lineno", None))
        if isinstance(node, ast.FunctionDef):
            args = node.args
            assert node.returns is None and not args.kwonlyargs and not args.posonlyargs, node.name
            assert all(a.annotation is None for a in args.args), node.name
        if isinstance(node, ast.Raise):
            assert node.cause is None


def _as_if(version: tuple, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Import the boot's sitecustomize in a Python that says it is ``version``, a user's sitecustomize after it
    on the path, capture on (PT2KIT_CAPTURE_DIR set)."""
    user = tmp_path / "user"
    user.mkdir(exist_ok=True)
    (user / "sitecustomize.py").write_text("import sys\nsys.stdout.write('user sitecustomize\\n')\n")
    code = (f"import sys; sys.version_info = {version!r}; sys.path[:0] = [{str(BOOT)!r}, {str(user)!r}]\n"
            "import sitecustomize\nprint('pt2kit_capture_boot' in sys.modules)\n")
    env = {**os.environ, "PT2KIT_CAPTURE_DIR": str(tmp_path / "scratch")}
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=60)


def test_on_python_2_it_does_nothing_and_on_3_9_it_runs_only_the_shadowed_sitecustomize(tmp_path):
    r = _as_if((2, 7, 18, "final", 0), tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "False\n", "")
    r = _as_if((3, 9, 18, "final", 0), tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "user sitecustomize\nFalse\n", "")
    r = _as_if(tuple(sys.version_info), tmp_path)  # this Python: the boot starts
    assert (r.returncode, r.stdout, r.stderr) == (0, "user sitecustomize\nTrue\n", "")


def test_a_real_python_2_says_nothing(tmp_path):
    """Where a python2.7 runs here (none is installed for this test)."""
    import pytest

    exe = next((p for p in map(shutil.which, ("python2.7", "python2")) if p and subprocess.run(
        [p, "-c", "pass"], capture_output=True).returncode == 0), None)
    if exe is None:
        pytest.skip("no python2.7 runs here")
    r = subprocess.run([exe, "-c", "print('ran')"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(BOOT), "PT2KIT_CAPTURE_DIR": str(tmp_path / "s")})
    assert (r.returncode, r.stdout, r.stderr) == (0, "ran\n", "")
