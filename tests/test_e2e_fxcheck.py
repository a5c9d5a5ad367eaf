"""fxcheck piped into other tools, on the demo's example, as the README shows it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]


def test_demo_example_under_npu_profile_pipes_through_cat(tmp_path):
    cmd = (f"{sys.executable} -m pt2kit.fxcheck {ROOT / 'examples' / 'tinynet.py'} --profile npu-bf16 "
           f"--store {tmp_path} | {sys.executable} -m pt2kit.runtime cat")
    p = subprocess.run(cmd, shell=True, capture_output=True, cwd=tmp_path, executable="/bin/bash")
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    recs = [msgspec.json.decode(line) for line in p.stdout.splitlines()]
    kinds = [r["kind"] for r in recs]
    assert kinds[:2] == ["header", "model"] and kinds.count("graph") == 2
    v = [r for r in recs if r["kind"] == "violation"]
    assert {r["constraint"] for r in v} == {"deny", "dtype", "align", "contiguous"}
    assert ("aten.relu_.default", "act") in {(r.get("op"), r.get("module")) for r in v}
    # the transposed operand of the matmul is fine; the one fed to an add is not
    contiguous = [r for r in v if r["constraint"] == "contiguous"]
    assert all(r["op"] != "aten.mm.default" for r in contiguous)
    assert any(r["op"] == "aten.add.Tensor" and r["source"].endswith("tinynet.py:23") for r in contiguous)
    # every blob a record names is in the store with the right hash
    from pt2kit.schema import BlobRef, Store

    store = Store(tmp_path)
    for g in (r for r in recs if r["kind"] == "graph"):
        assert b"def forward" in store.read(BlobRef(**g["code"]))
