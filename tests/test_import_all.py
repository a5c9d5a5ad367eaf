"""tests/import_all.py, which floors and newest run in each package's own virtualenv: an undeclared import fails
with the module and the name, an optional one (an extra's, or Triton's) passes and is counted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent / "import_all.py"


def _run(tmp_path: Path, *optional: str) -> subprocess.CompletedProcess:
    pkg = tmp_path / "planted_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('__all__ = ["fine"]\nfine = 1\n')
    (pkg / "ok.py").write_text("import json\n")
    (pkg / "undeclared.py").write_text("import undeclared_dist_xyz\n")
    (pkg / "gpu.py").write_text("import triton_zz.language\n")
    (pkg / "__main__.py").write_text("raise SystemExit('a __main__ runs the command: never imported')\n")
    return subprocess.run([sys.executable, str(SCRIPT), "planted_pkg", "triton_zz", *optional], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})


def test_an_undeclared_import_fails_naming_module_and_name_and_an_optional_one_passes(tmp_path):
    p = _run(tmp_path)
    assert p.returncode == 1
    assert p.stderr == ("import_all: planted_pkg.undeclared: needs undeclared_dist_xyz, which planted_pkg does not "
                        "declare\n")
    assert p.stdout.startswith("import_all: planted_pkg: 1 of 3 modules imported; 1 need what is optional here "
                               "(planted_pkg.gpu: needs triton"), p.stdout


def test_what_an_extra_brings_is_optional(tmp_path):
    p = _run(tmp_path, "undeclared_dist_xyz")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout.startswith("import_all: planted_pkg: 1 of 3 modules imported; 2 need what is optional here")
