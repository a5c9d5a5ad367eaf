"""`pt2kit capture -- python train.py | benchrun | kdiff | minify | reportgen`, from a hand-made capture
stream: a graph's model file in the store under its hash (tests/models/captured_relu.txt, the shape
pt2kit capture writes: FX's code, the script's line above each statement, the script's parameters on
`model`), named `train_relu.py[0/0]`. Every tool names it so, and the lines found are the script's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec

from pt2kit.schema import Captured, Header, Model, Store

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "models" / "train_relu.py"
LABEL = "train_relu.py[0/0]"


def captured_stream(store: Store) -> bytes:
    """What `pt2kit capture --store STORE -- python train_relu.py` writes for the script's one graph."""
    text = (ROOT / "tests" / "models" / "captured_relu.txt").read_text().replace("{script}", str(SCRIPT))
    code = store.put(text.encode(), "text/x-python", ".py")
    argv = ["python", "train_relu.py"]
    recs = [Header(v=1, run="cap", tool="capture", tool_version="0.1.0", argv=["capture", "--", *argv], time="t",
                   host="h", python="3", store=str(store.root)),
            Model(v=1, run="cap", model=LABEL, file=str(store.path(code)), parameters=2, trainable=2,
                  captured=Captured(command=argv, compile_id="0/0", code=code, backend="inductor", function="forward",
                                    source=f"{SCRIPT}:11", grad=True))]
    return b"".join(msgspec.json.encode(r) + b"\n" for r in recs)


def test_a_captured_graph_down_the_whole_pipe(tmp_path):
    (tmp_path / "cap.ndjson").write_bytes(captured_stream(Store(tmp_path / "store")))
    py = sys.executable
    p = subprocess.run(
        f"cat cap.ndjson | {py} -m pt2kit.benchrun --backend aot_eager --repeat 3 -q | "
        f"{py} -m pt2kit.kdiff --config cpp.inject_relu_bug_TESTING_ONLY=accuracy -q | "
        f"{py} -m pt2kit.minify -o repro.py | tee s.ndjson | {py} -m pt2kit.reportgen -o r.html -q"
        "; echo ${PIPESTATUS[@]}", shell=True, capture_output=True, cwd=tmp_path, executable="/bin/bash",
        env={"PT2KIT_STORE": str(tmp_path / "store"), "PATH": "/usr/bin:/bin"})
    codes, err = p.stdout.decode().splitlines()[-1].split(), p.stderr.decode()
    assert codes == ["0", "0", "1", "1", "0", "0"], err[-3000:]  # benchrun ran, kdiff fails, minify made a repro
    recs = [msgspec.json.decode(x) for x in (tmp_path / "s.ndjson").read_bytes().splitlines()]
    (model,) = [r for r in recs if r["kind"] == "model"]  # forwarded by each tool, never written again
    assert model["captured"]["compile_id"] == "0/0" and model["model"] == LABEL
    named = {(r["kind"], r.get("model")) for r in recs if r["kind"] in ("bench", "diff", "divergence", "repro")}
    assert named == {("bench", LABEL), ("diff", LABEL), ("divergence", LABEL), ("repro", LABEL)}
    (div,) = [r for r in recs if r["kind"] == "divergence"]
    assert (div["op"], div["source"], div["code"]) == ("aten.relu.default", f"{SCRIPT}:13", "return torch.relu(h) * 2")
    (rep,) = [r for r in recs if r["kind"] == "repro"]
    assert rep["ops"] == ["aten.relu.default"] and rep["reproduced"] == 3
    assert f"{SCRIPT}:13" in (tmp_path / "repro.py").read_text()
    assert f"minifying the accuracy failure of {LABEL}" in err
    html = (tmp_path / "r.html").read_text()
    assert '<section id="script">' in html and f"python train_relu.py: compile id 0/0, forward at {SCRIPT}:11" in html
