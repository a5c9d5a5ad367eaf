"""`kdiff m.py --verdict close | minify`. (`fxcheck m.py | kdiff | reportgen` is test_e2e_minify.py's
product line, whose one run minify goes on with.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
from e2ekit import user_env

ROOT = Path(__file__).resolve().parents[1]


def test_kdiff_verdict_close_into_minify_keeps_the_close_rule(tmp_path):
    """`kdiff m.py --verdict close | minify`: a failure only assert_close sees (the float64 rule passes
    it) is minified as the close failure the diff asked for, not dismissed as running the same."""
    py = sys.executable
    model = ROOT / "tests" / "models" / "float16_cancel.py"
    cmd = (f"{py} -m pt2kit.kdiff {model} --verdict close --no-localize -q | "
           f"{py} -m pt2kit.minify --no-bisect -o {tmp_path}/repro.py | tee {tmp_path}/s.ndjson > /dev/null; "
           "echo ${PIPESTATUS[@]}")
    p = subprocess.run(cmd, shell=True, capture_output=True, cwd=tmp_path, executable="/bin/bash",
                       env=user_env(PT2KIT_STORE=str(tmp_path / "store")), timeout=900)
    err = p.stderr.decode()
    assert p.stdout.decode().split()[-3:] == ["1", "1", "0"], err[-3000:]  # kdiff fails, minify made a repro
    recs = [msgspec.json.decode(x) for x in (tmp_path / "s.ndjson").read_bytes().splitlines()]
    (d,) = [r for r in recs if r["kind"] == "diff"]
    assert (d["rule"], d["passed"], d["close"], d["dtype"]) == ("close", False, False, "float16")
    assert "but is within the float64 rule" in err  # minify's own run: the float64 rule would pass it
    assert "minified as the close failure the diff's --verdict close asks for" in err and "runs the same" not in err
    (rep,) = [r for r in recs if r["kind"] == "repro"]
    assert rep["ops"] == ["aten.add.Tensor", "aten.sub.Tensor"] and rep["reproduced"] == 3
    repro = (tmp_path / "repro.py").read_text()
    assert "beyond assert_close (kdiff --verdict close)" in repro and "'rule': 'close'" in repro
