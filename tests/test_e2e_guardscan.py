"""`fxcheck m.py | guardscan | reportgen`: guardscan scans the model fxcheck loaded, and the page shows it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
from e2ekit import user_env

ROOT = Path(__file__).resolve().parents[1]


def test_fxcheck_into_guardscan_into_reportgen(tmp_path):
    py = sys.executable
    cmd = (f"{py} -m pt2kit.fxcheck {ROOT / 'examples' / 'tinynet.py'} -q | "
           f"{py} -m pt2kit.guardscan --vary requires_grad -q | tee {tmp_path}/s.ndjson | "
           f"{py} -m pt2kit.reportgen -o {tmp_path}/r.html -q; echo ${{PIPESTATUS[@]}}")
    p = subprocess.run(cmd, shell=True, capture_output=True, cwd=tmp_path, executable="/bin/bash",
                       env=user_env(PT2KIT_STORE=str(tmp_path / "store")))
    codes = p.stdout.decode().split()[-4:]
    # the requires_grad call recompiles (never dynamic): a finding, exit 1
    assert codes == ["0", "1", "0", "0"], p.stderr.decode()[-3000:]
    recs = [msgspec.json.decode(x) for x in (tmp_path / "s.ndjson").read_bytes().splitlines()]
    assert sorted(r["tool"] for r in recs if r["kind"] == "header") == ["fxcheck", "guardscan"]
    assert len([r for r in recs if r["kind"] == "model"]) == 1
    variants = [(v["name"], v["outcome"]) for v in recs if v["kind"] == "variant"]
    assert variants[0] == ("example inputs", "compiled") and variants[-1] == ("x: requires_grad False -> True", "recompiled")
    (rc,) = [r for r in recs if r["kind"] == "recompile" and "requires_grad" in r["trigger"]]
    assert rc["trigger"] == "x: requires_grad False -> True"
    assert any(a["rule"] == "input_properties" and a["change"].startswith("x = x.detach()")
               for a in recs if a["kind"] == "advice")
    html = (tmp_path / "r.html").read_text()
    assert '<section id="guards">' in html and "Calls with changed inputs" in html


def test_a_script_that_compiles_nothing_keeps_its_trace_and_guardscan_says_why(tmp_path):
    """`pt2kit capture -- python s.py | guardscan`: no graph kept (Dynamo skips a bidirectional LSTM), yet the
    script's structured trace travels in capture's header and guardscan names Dynamo's reason (it had no
    trace to read: 'no model records on stdin: nothing to do', exit 0)."""
    (tmp_path / "s.py").write_text(
        "import torch\n"
        "lstm = torch.compile(torch.nn.LSTM(4, 4, bidirectional=True))\n"
        "print(lstm(torch.ones(2, 3, 4))[0].shape)\n")
    p = subprocess.run("pt2kit capture -- python s.py | guardscan > g.ndjson; echo ${PIPESTATUS[@]}", shell=True,
                       capture_output=True, cwd=tmp_path, executable="/bin/bash",
                       env=user_env(PT2KIT_STORE=str(tmp_path / "store")))
    err = p.stderr.decode()
    assert p.stdout.decode().split()[-2:] == ["0", "1"], err  # capture: the script's 0; guardscan: findings
    assert "torch.Size([2, 3, 8])" in err and "no graph was compiled" in err and "`| guardscan` reads the script" in err
    recs = [msgspec.json.decode(x) for x in (tmp_path / "g.ndjson").read_bytes().splitlines()]
    (capture,) = [r for r in recs if r["kind"] == "header" and r["tool"] == "capture"]
    assert len(capture["traces"]) == 1 and not [r for r in recs if r["kind"] == "model"]
    breaks = [r for r in recs if r["kind"] == "graph_break"]
    assert breaks and all(r["model"] == "s.py (no graph kept)" for r in breaks)
    assert any("Attempted to wrap RNN, GRU, or LSTM" in r["reason"] for r in breaks)
    assert "s.py (no graph kept): 0 distinct graph(s)" in err and "nothing to do" not in err
