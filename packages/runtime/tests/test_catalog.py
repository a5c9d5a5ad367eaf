"""`pt2kit ls` over saved streams, as a user runs them (`pt2kit gc`: test_storegc.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pt2kit.schema import Crash, Diff, Error, Graph, Header, Model, Repro, Store, Violation
from pt2kit.schema.stream import RecordWriter

D = {"ref": "eager", "test": "inductor", "atol": 1e-5, "rtol": 1e-5}
STREAMS = Path(__file__).resolve().parents[3] / "tests" / "streams"


def pt2kit(*args: str, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pt2kit.runtime", *args], input=stdin, capture_output=True,
                          cwd=cwd, timeout=120)


def _run(path: Path, run: str, tool: str, *recs: tuple) -> None:
    with open(path, "ab") as f:
        w = RecordWriter(f, run=run)
        w.emit_new(Header, tool=tool, tool_version="9.9", argv=[], time="t", host="h", python="3", store="s")
        for cls, fields in recs:
            w.emit_new(cls, **fields)


def test_ls_is_one_line_per_run_with_its_worst_verdict(tmp_path):
    s = tmp_path / "a.ndjson"
    _run(s, "r1", "fxcheck", (Model, {"model": "m.py", "file": "/m.py", "device": "cpu"}),
         (Violation, {"constraint": "dtype", "message": "x", "phase": "forward"}))
    _run(s, "r2", "kdiff", (Diff, {"output": "out", "passed": False, "model": "m.py", **D}),
         (Diff, {"output": "out2", "passed": True, "model": "m.py", **D}))
    _run(s, "r3", "kdiff", (Crash, {"stage": "run", "model": "n.py"}), (Error, {"message": "x", "exit_code": 2}))
    _run(s, "r4", "guardscan", (Graph, {"phase": "dynamo", "model": "ok.py"}))
    r = pt2kit("ls", str(s))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert [ln.split()[0] for ln in lines] == ["r1", "r2", "r3", "r4"]
    assert [ln.split()[4] for ln in lines] == ["findings", "fail", "error(2)", "clean"]
    assert "m.py" in lines[0] and "violation=1" in lines[0] and "diff=2" in lines[1]
    # the real streams: every tool's run is listed with the verdict its exit code had
    r = pt2kit("ls", str(STREAMS))
    verdicts = {ln.split()[1]: ln.split()[4] for ln in r.stdout.decode().splitlines() if "tinynet" in ln}
    assert verdicts == {"fxcheck": "findings", "kdiff": "fail"}


def test_ls_counts_a_forwarded_record_once_and_a_repro_is_a_finding_on_its_model(tmp_path):
    # kdiff's stream, and minify's: kdiff's lines forwarded byte for byte, then minify's repro
    kdiff, minify = tmp_path / "kdiff.ndjson", tmp_path / "minify.ndjson"
    _run(kdiff, "rk", "kdiff", (Diff, {"output": "out", "passed": False, "model": "relu.py", **D}))
    minify.write_bytes(kdiff.read_bytes())
    repro = Store(tmp_path / "st").put_text("import torch\n", "text/x-python", ".py")
    _run(minify, "rm", "minify", (Repro, {"model": "relu.py", "path": repro, "failure": "accuracy", "nodes_before": 9,
                                         "nodes_after": 1, "reproduces": True, "reproduced": 3, "runs": 3}))
    r = pt2kit("ls", str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = {ln.split()[0]: ln.split() for ln in r.stdout.decode().splitlines()}
    assert lines["rk"][1:] == ["kdiff", "9.9", "relu.py", "fail", "diff=1"]
    assert lines["rm"][1:] == ["minify", "9.9", "relu.py", "findings", "repro=1"]
    # the same record twice in one stream is two records: only copies across inputs are folded
    with open(kdiff, "ab") as f:
        f.write(kdiff.read_bytes().splitlines(keepends=True)[1])
    r = pt2kit("ls", str(kdiff), str(minify), "-", stdin=minify.read_bytes())
    assert [ln.split()[-1] for ln in r.stdout.decode().splitlines()] == ["diff=2", "repro=1"]
