"""reportgen's time for 1k, 10k and 100k records: the cost must grow linearly.

A mixed stream (violations over a few models and ops, passing and failing diffs, kernels, graph
breaks) is generated, then read, collected and rendered to HTML and to text in one process. The
per-record cost at 100k is compared with the one at 1k in the same run (goal: within 2x, i.e.
linear). Run: `nox -s bench -- benchmarks/bench_reportgen.py`.
"""

from __future__ import annotations

import io
import time

from pt2kit.reportgen import collect, render
from pt2kit.schema import Diff, GraphBreak, Header, Kernel, KernelArg, Metrics, Stats, Violation, read_stream
from pt2kit.schema.stream import RecordWriter


def stream(n: int) -> bytes:
    out = io.BytesIO()
    w = RecordWriter(out, run="bench")
    w.emit_new(Header, tool="fxcheck", tool_version="1", argv=[], time="t", host="h", python="3", store="/nowhere")
    for i in range(n - 1):
        k = i % 10
        if k < 6:
            w.emit_new(Violation, model=f"m{i % 5}.py", constraint=("dtype", "align", "memory")[i % 3],
                       message=f"dim 0 of size {i} is not a multiple of 16", phase="forward", node=f"n{i}",
                       op=f"aten.op{i % 40}.default", dtype="float32", shape=[i, 16], source=f"m.py:{i % 300}")
        elif k < 8:
            m = Metrics(numel=100, max_abs=1e-3, mean_abs=1e-5, max_rel=1e-3, rmse=1e-4, mismatches=i % 2,
                        mismatch_share=0.01 * (i % 2))
            w.emit_new(Diff, model="m.py", output=f"out[{i}]", ref="eager", test="inductor", atol=1e-5, rtol=1e-5,
                       passed=bool(i % 2), metrics=m, worst_index=[i % 7, 3], worst_ref=1.0, worst_test=1.001)
        elif k < 9:
            w.emit_new(Kernel, name=f"cpp_fused_{i}", launch=i, args=[KernelArg(name="buf0", dtype="float32",
                       shape=[64], stats=Stats(numel=64, mean=0.1, min=-1.0, max=1.0 + i))])
        else:
            w.emit_new(GraphBreak, reason="Tensor.item()", source=f"m.py:{i % 100}")
    return out.getvalue()


def timed(data: bytes) -> tuple[float, float, int]:
    t = time.perf_counter()
    c = collect(read_stream(["-"], stdin=io.BytesIO(data)))
    html = render(c, "html")
    t_html = time.perf_counter() - t
    t = time.perf_counter()
    render(collect(read_stream(["-"], stdin=io.BytesIO(data))), "text")
    return t_html, time.perf_counter() - t, len(html)


def main() -> None:
    timed(stream(200))  # warm imports (jinja2, matplotlib) outside the timings
    rows = []
    for n in (1_000, 10_000, 100_000):
        data = stream(n)
        best = min((timed(data) for _ in range(3)), key=lambda r: r[0])
        rows.append((n, *best))
    print(f"{'records':>8} {'html s':>8} {'us/rec':>8} {'page MB':>8} {'text s':>8} {'us/rec':>8}")
    for n, th, tt, size in rows:
        print(f"{n:>8} {th:8.3f} {th / n * 1e6:8.1f} {size / 1e6:8.2f} {tt:8.3f} {tt / n * 1e6:8.1f}")
    growth = (rows[2][1] / rows[2][0]) / (rows[0][1] / rows[0][0])
    print(f"html cost per record, 100k vs 1k: {growth:.2f}x  (linear goal <= 2x: {'met' if growth <= 2 else 'MISSED'})")


if __name__ == "__main__":
    main()
