"""`pt2kit ls` and `pt2kit gc` over saved streams and their store, as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pt2kit.schema import Crash, Diff, Error, Graph, Header, Model, RecordWriter, Store, Violation

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


def test_gc_deletes_only_unreferenced_blobs_of_the_store_form(tmp_path):
    store = Store(tmp_path / "store")
    kept = store.put_text("kept", ext=".txt")
    gone = store.put_text("gone", ext=".txt")
    also_kept = store.put(b"\x89PNG", "image/png", ".png")
    s = tmp_path / "s.ndjson"
    _run(s, "r1", "fxcheck", (Graph, {"phase": "dynamo", "code": kept}))
    with open(s, "ab") as f:  # a kind this version does not know still keeps its blobs
        f.write(b'{"kind":"future","v":1,"run":"r9","blob":{"path":"' + also_kept.path.encode()
                + b'","sha256":"' + also_kept.sha256.encode() + b'","size":4,"media_type":"image/png"}}\n')
    root = store.root / "blobs"
    foreign = root / "notes.txt"
    foreign.write_text("mine")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    sha = "ab" * 32
    (root / "ab").mkdir(exist_ok=True)
    (root / "ab" / f"{sha}.txt").symlink_to(outside)
    dead_tmp = root / "ab" / f".{sha}.txt.999999.deadbeef.tmp"
    dead_tmp.write_text("partial")

    r = pt2kit("gc", "--store", str(store.root), str(s), "--dry-run")
    assert r.returncode == 0, r.stderr
    listed = sorted(Path(p).name for p in r.stdout.decode().splitlines())
    assert listed == sorted([Path(gone.path).name, f"{sha}.txt", dead_tmp.name])
    assert (store.root / gone.path).exists()

    r = pt2kit("gc", "--store", str(store.root), str(s))
    assert r.returncode == 0 and "deleted 3 file(s)" in r.stderr.decode() and "kept 2 blob(s)" in r.stderr.decode()
    assert not (store.root / gone.path).exists() and not dead_tmp.exists()
    assert (store.root / kept.path).exists() and (store.root / also_kept.path).exists()
    assert foreign.read_text() == "mine" and outside.read_text() == "keep me"


def test_gc_needs_streams_and_a_store(tmp_path):
    r = pt2kit("gc", "--store", str(tmp_path))
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1
    s = tmp_path / "s.ndjson"
    _run(s, "r1", "fxcheck")
    r = pt2kit("gc", "--store", str(tmp_path / "nope"), str(s))
    assert r.returncode == 2 and "no such store" in r.stderr.decode()
