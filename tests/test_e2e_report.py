"""The README's pipe: fxcheck's records into reportgen, a page with the findings and the graphs' code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]


def test_fxcheck_into_reportgen(tmp_path):
    out = tmp_path / "report.html"
    cmd = (f"set -o pipefail; {sys.executable} -m pt2kit.fxcheck {ROOT / 'examples' / 'tinynet.py'} "
           f"--profile npu-bf16 --exit-zero --store {tmp_path / 'store'} -q | {sys.executable} -m pt2kit.reportgen -o {out}")
    p = subprocess.run(cmd, shell=True, capture_output=True, cwd=tmp_path, executable="/bin/bash")
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    (report,) = [r for r in map(msgspec.json.decode, p.stdout.splitlines()) if r["kind"] == "report"]
    assert report["path"] == str(out) and report["format"] == "html"
    html = out.read_text()
    assert '<section id="violations">' in html and '<section id="graphs">' in html
    assert "tinynet.py:19" in html and "aten.relu_.default" in html
    assert "def forward(self" in html  # the graph code blob, found through fxcheck's header
    text = subprocess.run([sys.executable, "-m", "pt2kit.reportgen", "--format", "text", "--store",
                           str(tmp_path / "store")], input=b"", capture_output=True)
    assert text.returncode == 0 and text.stderr.decode().startswith("reportgen: warning: no records")
