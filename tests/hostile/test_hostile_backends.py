"""Issue 55's attacks on how a tool comes to import a backend, kept as tests of what the user sees.

Finding 1: a stream is data. A `model` record whose ``captured.backend`` was edited to code (a file's
function, ``module:attr`` from the worker's path, the stdlib's ``this``), ``backend_code`` null, made
kdiff and minify import it and compile with it (kdiff: "1 of 1 leaves pass (.../evil.py:bk vs eager)",
exit 0). Now: one line naming it and the flag that hands code over, exit 2, nothing imported.

Finding 4: a ``--backend FILE.py:NAME`` whose file runs more than definitions at import (a script without
a ``__main__`` guard) ran that script again in every worker. Now: one line naming the line that runs and
how to hand the backend over, exit 2, the script's top level never run.

The streams are written by hand (no capture run): the refusals come before any model runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PY = sys.executable
# a backend file that leaves a mark when anything imports it
EVIL = """from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("evil.py's top level ran")


def bk(gm, example_inputs):
    Path(__file__).with_name("CALLED").write_text("evil.py's backend ran")
    return gm.forward
"""
MODEL = "import torch\nmodel = torch.nn.Linear(4, 4)\nexample_inputs = (torch.randn(2, 4),)\n"
HEADER = {"kind": "header", "v": 1, "run": "r1", "tool": "capture", "tool_version": "1.0.0", "argv": ["capture"],
          "time": "2026-11-29T00:00:00Z", "host": "h", "python": "3.11.7", "store": "st", "schema": "1.4.0"}
CODE = {"path": "blobs/ab/ab.py", "sha256": "ab" * 32, "size": 1, "media_type": "text/x-python"}


def _tool(cwd: Path, tool: str, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", f"pt2kit.{tool}", "--store", str(cwd / "store"), *args], input=stdin,
                          capture_output=True, cwd=cwd, timeout=300)


def _stream(cwd: Path, backend: str, check: str | None = None) -> bytes:
    """capture's stream of one graph, its record's backend edited to ``backend`` (``check``: the failure a
    `capture --check accuracy` found, what minify takes)."""
    (cwd / "model.py").write_text(MODEL)
    captured = {"command": ["python", "t.py"], "compile_id": "0/0", "code": CODE, "backend": backend, "check": check}
    model = {"kind": "model", "v": 1, "run": "r1", "model": "t.py[0/0]", "file": str(cwd / "model.py"),
             "device": "cpu", "inputs": [], "captured": captured}
    return (json.dumps(HEADER) + "\n" + json.dumps(model) + "\n").encode()


@pytest.mark.parametrize("tool", ["kdiff", "minify"])
@pytest.mark.parametrize("named", ["{cwd}/evil.py:bk", "evil:bk", "this:s"])
def test_a_stream_that_names_code_as_its_backend_makes_no_tool_import_it(tmp_path, tool, named):
    (tmp_path / "evil.py").write_text(EVIL)  # on the worker's path too (its cwd): `evil:bk` would import it
    backend = named.format(cwd=tmp_path)
    check = "accuracy: out[0]: 8 of 8 elements differ (RMSE vs float64 0.5 > 3 x eager's)"
    r = _tool(tmp_path, tool, *(["--no-bisect"] if tool == "minify" else []), stdin=_stream(tmp_path, backend, check))
    err = r.stderr.decode()
    assert r.returncode == 2, err[-3000:]
    assert err.splitlines()[-1] == (
        f"{tool}: error: <stdin>:2: t.py[0/0]: the stream names code as its backend ({backend}), which {tool} will "
        "not import: a stream names only a backend torch registers; to test your own, give --backend FILE.py:NAME")
    assert not (tmp_path / "IMPORTED").exists() and not (tmp_path / "CALLED").exists()
    assert b"The Zen of Python" not in r.stdout + r.stderr  # the stdlib's `this` was not imported either
    assert b'"kind":"diff"' not in r.stdout and b'"kind":"repro"' not in r.stdout


@pytest.mark.parametrize("tool", ["kdiff", "minify"])
def test_a_backend_file_whose_script_runs_at_import_is_refused_before_it_runs(tmp_path, tool):
    """The user's own --backend of a script with no __main__ guard: its top level never runs (it would in
    every worker: triage ran one 12 times); the one line says where it runs and what to do."""
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "train.py").write_text(
        "from pathlib import Path\n\n\ndef my_backend(gm, example_inputs):\n    return gm.forward\n\n\n"
        "def train():\n    Path(__file__).with_name(\"TRAINED\").write_text(\"an hour of training\")\n\n\ntrain()\n")
    r = _tool(tmp_path, tool, "model.py", "--backend", "train.py:my_backend")
    err = r.stderr.decode()
    assert r.returncode == 2, err[-3000:]
    assert err.splitlines()[-1] == (
        f"{tool}: error: --backend train.py:my_backend: train.py runs code at import (line 12: `train()`), so its "
        "backend my_backend cannot be loaded from it without running the script again: put the backend in a file "
        "of its own and pass --backend FILE.py:my_backend, or put the script's run under if __name__ == "
        "\"__main__\":")
    assert not (tmp_path / "TRAINED").exists()
