"""Across packages: streams written by one writer, read by the `pt2kit` command, as a user pipes them."""

from __future__ import annotations

import subprocess
import sys

import msgspec

from pt2kit.schema import Graph
from pt2kit.schema.stream import RecordWriter


def test_concatenated_runs_and_future_kinds_pass_through_unchanged(tmp_path):
    parts = []
    for run in ("a", "b"):
        f = tmp_path / f"{run}.ndjson"
        with open(f, "wb") as out:
            w = RecordWriter(out, run=run)
            w.emit_new(Graph, phase="dynamo", nodes=2)
            w.forward(b'{"kind":"from_the_future","v":1,"run":"' + run.encode() + b'","x":[1]}')
        parts.append(f.read_bytes())
    r = subprocess.run(f"cat {tmp_path}/a.ndjson {tmp_path}/b.ndjson | {sys.executable} -m pt2kit.runtime cat",
                       shell=True, capture_output=True)
    assert r.returncode == 0
    assert r.stdout == b"".join(parts)
    assert r.stderr.decode() == ("pt2kit: warning: kinds this version does not know, forwarded as they were: "
                                 "from_the_future (2)\n")
    runs = [msgspec.json.decode(line)["run"] for line in r.stdout.splitlines()]
    assert runs == ["a", "a", "b", "b"]
