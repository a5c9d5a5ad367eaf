"""A stream with every record kind, as tools write them (the reportgen tests' fixture data), and
reportgen run in this process."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import typer

from pt2kit.schema import (
    Advice,
    Bench,
    Bisect,
    BisectRun,
    Captured,
    Crash,
    Diff,
    Divergence,
    Error,
    Graph,
    GraphBreak,
    Guard,
    Header,
    Kernel,
    KernelArg,
    Latency,
    Metrics,
    Model,
    Recompile,
    Repro,
    Stats,
    Store,
    Violation,
)
from pt2kit.schema.records import num
from pt2kit.schema.stream import RecordWriter


def cli(args: list[str]) -> tuple[int, str]:
    """reportgen in this process, as its command line runs it: (exit code, stderr)."""
    from pt2kit.reportgen.cli import app

    out, err = io.TextIOWrapper(io.BytesIO()), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            typer.main.get_command(app).main(args, prog_name="reportgen")
            code = 0
        except SystemExit as e:
            code = int(e.code or 0)
    return code, err.getvalue()


EVIL = "<script>window.__pwned=1</script>"
EVIL_MSG = '<img src=x onerror="window.__pwned=2">'
# A 1x1 PNG, as kdiff's heatmaps are PNG blobs.
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


def header(w: RecordWriter, tool: str, store: Path) -> None:
    w.emit_new(Header, tool=tool, tool_version="1.0.0", argv=[tool, "m.py"], time="2026-11-21T00:00:00Z",
               host="box", python="3.11.7", store=str(store), torch="2.13.0", device="cpu")


def full_stream(store_dir: Path, *, big_code: bool = False) -> bytes:
    store = Store(store_dir)
    out = io.BytesIO()
    w = RecordWriter(out, run="run-fx")
    header(w, "fxcheck", store_dir)
    w.emit_new(Model, model=EVIL, file="/m.py", device="cpu")
    code = store.put_text("def forward(self, x):\n    return x + 1\n" * (3000 if big_code else 1), "text/x-python", ".py")
    w.emit_new(Graph, model=EVIL, phase="forward", nodes=3, ops={"aten.addmm.default": 2}, code=code)
    for i in range(3):
        w.emit_new(Violation, model=EVIL, constraint="dtype", message=EVIL_MSG if i == 0 else "float64 here",
                   phase="forward", node=f"addmm_{i}", op="aten.addmm.default", dtype="float64", shape=[10, 4],
                   source="/src/m.py:12", code="return self.fc(x)", module="fc")
    w.emit_new(Violation, model="other.py", constraint="align", message="dim 0 of size 10", phase="backward",
               op="aten.mm.default", source="/src/o.py:3")
    w.forward(b'{"kind":"kernel_timeline","v":1,"run":"run-fx","spans":[1,2]}')
    # a graph of the user's script, as `pt2kit capture -- python train.py` writes it, forwarded by two tools
    cap = store.put_text("class Graph(torch.nn.Module):\n    pass\n", "text/x-python", ".py")
    captured = Captured(command=["python", "train.py", "--steps", "3"], compile_id="1/2", code=cap, backend="inductor",
                        mode="max-autotune", function="forward", source="/src/train.py:40", grad=True, rank=1,
                        values="small", error="RuntimeError: boom")
    for _ in range(2):
        w.emit_new(Model, model="train.py[r1:1/2]", file=str(store.path(cap)), captured=captured)
    w2 = RecordWriter(out, run="run-kd")
    header(w2, "kdiff", store_dir)
    heat = store.put(PNG, "image/png", ".png")
    m = Metrics(numel=40, max_abs=num(0.5), mean_abs=0.01, max_rel=num(float("inf")), rmse=0.08, mismatches=1,
                mismatch_share=0.025, nan_test=1)
    w2.emit_new(Diff, model="m.py", output="out[0]", ref="eager64", test="inductor", atol=1e-5, rtol=1.3e-6,
                passed=False, metrics=m, worst_index=[3, 1], worst_ref=num(1.0), worst_test=num(float("nan")),
                heatmap=heat)
    w2.emit_new(Diff, model="m.py", output="out[1]", ref="eager64", test="inductor", atol=1e-5, rtol=1.3e-6,
                passed=True, metrics=Metrics(numel=4, max_abs=0.0, mean_abs=0.0, max_rel=0.0, rmse=0.0,
                                             mismatches=0, mismatch_share=0.0))
    w2.emit_new(Divergence, model="m.py", output="out[0]", node="relu", op="aten.relu.default", source="/src/m.py:9",
                code="y = torch.relu(x)", metrics=m, compiles=4)
    w3 = RecordWriter(out, run="run-gs")
    header(w3, "guardscan", store_dir)
    w3.emit_new(GraphBreak, model="m.py", reason="Tensor.item() call", gb_id="GB0124", source="/src/m.py:20",
                code="n = x.sum().item()", call="Tensor.item")
    w3.emit_new(Guard, model="m.py", frame="0/0", guard="TENSOR_MATCH", expr="L['x'].size()[0] == 8", source="L['x']")
    w3.emit_new(Recompile, model="m.py", frame="0/1", reason="tensor 'x' size mismatch at index 0. expected 4, actual 8",
                guard="L['x'].size()[0] == 4", trigger="x dim 0: 4 -> 8")
    w3.emit_new(Recompile, model="m.py", frame="0/2", reason="automatic dynamic", expected=True)
    w3.emit_new(Advice, model="m.py", rule="mark-dynamic", message="mark dim 0 dynamic",
                change="torch._dynamo.mark_dynamic(x, 0)")
    w4 = RecordWriter(out, run="run-ao")
    header(w4, "aotiprint", store_dir)
    for launch, (name, nan) in enumerate([("cpp_fused_relu_0", 0), ("cpp_fused_log_1", 3)]):
        w4.emit_new(Kernel, model="m.py", name=name, launch=launch, when="before",
                    args=[KernelArg(name="buf1", dtype="float32", shape=[4], uninitialised=True)])
        w4.emit_new(Kernel, model="m.py", name=name, launch=launch, when="after",
                    args=[KernelArg(name="buf1", dtype="float32", shape=[4],
                                    stats=Stats(numel=4, mean=num(float("nan")) if nan else 0.5, min=-1.0,
                                                max=num(2.0 * (launch + 1)), nan=nan))],
                    nodes=["relu"], sources=["/src/m.py:9"])
    w5 = RecordWriter(out, run="run-br")
    header(w5, "benchrun", store_dir)
    for be, ms in (("eager", 2.0), ("inductor", 1.0)):
        w5.emit_new(Bench, model="m.py", backend=be, compile_s=1.5 if be != "eager" else None,
                    latency=Latency(n=10, mean=ms / 1000, median=ms / 1000, min=ms / 1000, max=ms / 1000),
                    peak_mem_bytes=1 << 20, graphs=1, kernels=3)
    w6 = RecordWriter(out, run="run-mi")
    header(w6, "minify", store_dir)
    repro = store.put_text("import torch\n# repro\n", "text/x-python", ".py")
    w6.emit_new(Repro, model="m.py", path=repro, failure="compile-error", nodes_before=40, nodes_after=2, reproduces=True,
                signature="CppCompileError: C++ compile error", ops=["aten.relu.default", "aten.mul.Tensor"],
                inputs_before=4096, inputs_after=1, config={"cpp.inject_relu_bug_TESTING_ONLY": "compile_error"},
                queries=7, wall_s=12.5, reproduced=3, runs=3)
    w6.emit_new(Bisect, model="m.py", graph=0, phase="forward", tested="inductor", backend="inductor",
                chain={"eager": False, "aot_eager": False, "aot_eager_decomp_partition": False, "inductor": True},
                subsystem="lowerings", application=0, applications=2, what="relu: aten.relu.default",
                env={"TORCH_BISECT_BACKEND": "inductor", "TORCH_BISECT_SUBSYSTEM": "lowerings", "TORCH_BISECT_MAX": "0"},
                found=True, verdict="Inductor: lowerings, application 0 of 2 (relu: aten.relu.default)",
                off=BisectRun(setting="TORCH_BISECT_MAX=-1", fails=False, signature="passes"),
                on=BisectRun(setting="TORCH_BISECT_MAX=0", fails=True, signature="CppCompileError: C++ compile error"),
                steps=9, wall_s=6.5)
    w6.emit_new(Crash, model="m.py", stage="run", signal="SIGSEGV", exitcode=-11, message="killed by SIGSEGV",
                last_kernel="cpp_fused_log_1", stderr_tail="Fatal Python error: Segmentation fault\n  File m.py line 8\n")
    w6.emit_new(Error, message=f"m.py: no such model file {EVIL}", exit_code=2)
    return out.getvalue()
