"""reportgen --compare BEFORE AFTER: what changed between two runs, and exit 1 on a regression."""

from __future__ import annotations

import io

import msgspec

from pt2kit.schema import Bench, CompileTime, Crash, Diff, GraphBreak, KernelTime, Latency, Violation
from pt2kit.schema.stream import RecordWriter


def _lat(ms: float) -> Latency:
    return Latency(n=50, mean=ms / 1e3, median=ms / 1e3, min=ms / 1e3, max=ms / 1e3, p10=ms / 1e3, p90=ms / 1e3,
                   iqr=0.0)


def _run(path, *, speedups, accuracy="pass", diff_passes=True, extra=()):
    out = io.BytesIO()
    w = RecordWriter(out, run=path.stem)
    for model, (s, lo, hi) in speedups.items():
        w.emit_new(Bench, model=model, backend="inductor", device="cuda", mode="infer", eager=_lat(2.0),
                   latency=_lat(2.0 / s), speedup=s, speedup_lo=lo, speedup_hi=hi, accuracy=accuracy,
                   compile_s=10.0, compile_cold=CompileTime(total_s=10.0, dynamo_s=1.0, aot_s=2.0, inductor_s=6.0,
                                                            first_run_s=1.0),
                   top_kernels=[KernelTime(name="triton_poi_fused_relu_0", calls=1, us=5.0, share=1.0)])
    w.emit_new(Diff, model="m.py", output="out", ref="eager", test="inductor", atol=1e-5, rtol=1e-5,
               passed=diff_passes)
    w.emit_new(Violation, model="m.py", constraint="dtype", message="float64", phase="forward", node="addmm_3",
               op="aten.addmm.default", dtype="float64", source="m.py:12")
    for rec in extra:
        w.emit(rec(w))
    path.write_bytes(out.getvalue())
    return str(path)


def test_regressions_and_improvements_beyond_the_intervals(reportgen, tmp_path):
    before = _run(tmp_path / "before.ndjson", speedups={"bert.py": (1.5, 1.45, 1.55), "resnet.py": (1.7, 1.6, 1.8),
                                                         "ssm.py": (9.0, 8.0, 10.0)})
    after = _run(tmp_path / "after.ndjson", speedups={"bert.py": (1.2, 1.15, 1.25), "resnet.py": (1.75, 1.65, 1.85),
                                                       "ssm.py": (12.0, 11.0, 13.0)},
                 diff_passes=False,
                 extra=[lambda w: w.make(GraphBreak, model="m.py", reason="print", gb_id="GB0001", source="m.py:7"),
                        lambda w: w.make(Crash, model="gpt2.py", backend="inductor", stage="compile",
                                         signal="SIGSEGV")])
    r = reportgen("--compare", before, after, "-o", str(tmp_path / "cmp.json"))
    assert r.returncode == 1, r.stderr
    doc = msgspec.json.decode((tmp_path / "cmp.json").read_bytes())
    got = {(c["section"], c["key"].split(" ")[0]): c["verdict"] for c in doc["changes"]}
    assert got[("benchmarks", "bert.py")] == "regression"  # [1.15, 1.25] lies below [1.45, 1.55]
    assert got[("benchmarks", "resnet.py")] == "unchanged"  # the intervals overlap: noise
    assert got[("benchmarks", "ssm.py")] == "improvement"
    assert got[("diffs", "m.py")] == "regression"
    assert got[("graph breaks", "m.py:")] == "regression" and got[("crashes", "gpt2.py")] == "regression"
    assert ("findings", "m.py:") not in got  # the same finding in both: no change
    assert doc["regressions"] == 4
    text = reportgen("--compare", before, after).stdout.decode()
    assert "REGRESSION  bert.py × inductor (cuda): 1.50x [1.45, 1.55] -> 1.20x [1.15, 1.25]" in text


def test_the_same_run_twice_has_no_regression(reportgen, tmp_path):
    a = _run(tmp_path / "a.ndjson", speedups={"bert.py": (1.5, 1.45, 1.55)})
    r = reportgen("--compare", a, a)
    assert r.returncode == 0, r.stderr
    assert "0 regression(s)" in r.stdout.decode()


def test_an_accuracy_status_that_leaves_pass_is_a_regression_on_every_format(reportgen, tmp_path):
    a = _run(tmp_path / "a.ndjson", speedups={"bert.py": (1.5, 1.45, 1.55)})
    b = _run(tmp_path / "b.ndjson", speedups={"bert.py": (1.5, 1.45, 1.55)}, accuracy="fail_accuracy")
    for suffix in ("html", "md", "txt", "json"):
        r = reportgen("--compare", a, b, "-o", str(tmp_path / f"cmp.{suffix}"))
        assert r.returncode == 1, r.stderr
        assert "fail_accuracy" in (tmp_path / f"cmp.{suffix}").read_text().replace("\\_", "_")
    page = (tmp_path / "cmp.html").read_text()
    assert 'class="change regression"' in page and "Content-Security-Policy" in page


def test_compare_needs_two_runs(reportgen, tmp_path):
    a = _run(tmp_path / "a.ndjson", speedups={})
    r = reportgen("--compare", a)
    assert r.returncode == 2 and r.stdout == b""
    assert "--compare takes two runs, BEFORE AFTER; got 1 input(s)" in r.stderr.decode()


def test_the_benchmark_section_shows_interval_split_memory_and_kernels(tmp_path):
    from pt2kit.reportgen import collect, render
    from pt2kit.schema import read_stream

    src = _run(tmp_path / "a.ndjson", speedups={"bert.py": (1.52, 1.45, 1.6)})
    html = render(collect(read_stream([src])), "html", out_dir=tmp_path, store=None)
    section = html[html.index('id="bench"'):]
    assert "1.52×</b> [1.45, 1.60]" in section
    assert "(1 / 2 / 6 / 1)" in section  # Dynamo / AOT / Inductor / first run
    assert "triton_poi_fused_relu_0" in section
