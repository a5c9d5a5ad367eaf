"""guardscan against torch._dynamo.explain on the same model, in one run.

explain compiles the model once (eager backend) and reports graphs, breaks and guards; guardscan's
library path does the same compile under the structured-trace capture and turns it into records
(graphs, breaks, every guard of every compile, advice), so the like-for-like comparison is with no
input variants. The default scan (two variants: dim 0 doubled, then halved, one more compile) and
the whole command are printed too. Each from a reset Dynamo, interleaved, median of REPEAT.
Run: `nox -s bench -- benchmarks/bench_guardscan.py`.
"""

from __future__ import annotations

import importlib.util
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from pt2kit.guardscan.findings import analyze
from pt2kit.guardscan.live import scan
from pt2kit.guardscan.records import emit_findings
from pt2kit.guardscan.torchapi import quiet_dynamo
from pt2kit.guardscan.variants import default_variants
from pt2kit.schema import Store
from pt2kit.schema.stream import RecordWriter

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "packages" / "guardscan" / "tests" / "models" / "item.py"  # a break, so explain has work too
REPEAT = 7


def load():
    spec = importlib.util.spec_from_file_location("item", MODEL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.model, mod.example_inputs


def explain() -> float:
    model, inputs = load()
    torch._dynamo.reset()
    t = time.perf_counter()
    out = torch._dynamo.explain(model)(*inputs)
    assert out.graph_break_count == 1
    return time.perf_counter() - t


def guardscan(store: Store, variants: bool) -> float:
    model, inputs = load()
    writer = RecordWriter(io.BytesIO())
    t = time.perf_counter()
    result = scan(model, inputs, default_variants() if variants else [])
    counts = emit_findings(analyze(result.trace), writer.emit_new, store, model="item.py", calls=result.calls)
    assert counts["breaks"] == 1
    return time.perf_counter() - t


def command(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    quiet_dynamo()
    with tempfile.TemporaryDirectory() as d:
        store = Store(d)
        explain(), guardscan(store, False)  # warm both paths once
        a, o, ov = [], [], []
        for _ in range(REPEAT):
            a.append(explain())
            o.append(guardscan(store, False))
            ov.append(guardscan(store, True))
        ma, mo, mv = (statistics.median(x) for x in (a, o, ov))
        print(f"in-process, median of {REPEAT}: explain {ma * 1000:.0f} ms, guardscan (no variants) {mo * 1000:.0f} ms: "
              f"{mo / ma:.2f}x; guardscan with the default variants {mv * 1000:.0f} ms: {mv / ma:.2f}x")
        cmd = [sys.executable, "-m", "pt2kit.guardscan", str(MODEL), "--store", d, "-q"]
        print(f"whole command (child process, default variants): {statistics.median(command(cmd) for _ in range(3)):.2f} s")


if __name__ == "__main__":
    main()
