"""PyTorch's CPU minifier tests as plain scripts (this folder, one file a test) and what each test asserts.

Shared by tests/test_e2e_minifier_ported.py (the README pipeline on each) and
benchmarks/bench_minifier_tests.py (the count against PyTorch's own minifier on the same scripts).
Standard library only: importing it costs nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
# the tools' commands (pt2kit, kdiff, minify): beside the interpreter, or where PT2KIT_BIN says (a machine
# that runs pt2kit from its source trees, with shims)
BIN = Path(os.environ.get("PT2KIT_BIN") or Path(PY).parent)


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # tests/minifier/<name>.py
    test: str  # the PyTorch test it ports
    repro_after: str  # how PyTorch's own minifier is set on it: dynamo | aot | aot_inductor
    error: str | None  # what the test asserts in the repro's stderr; None: nothing fails, no repro
    accuracy: bool = False  # the README pipeline runs kdiff before minify
    ops: tuple[str, ...] = ()  # the ops the test asserts the minified graph holds ("" = not asserted)
    isolate: bool = False  # the test runs PyTorch's minifier in subprocesses (the failure kills the process)

    @property
    def script(self) -> Path:
        return HERE / f"{self.name}.py"

    @property
    def repro_level(self) -> int:
        # as MinifierTestBase._run_full_test picks it
        if self.isolate:
            return 3
        return 4 if self.error in (None, "AccuracyError") else 2


DYN = "test/dynamo/test_minifier.py::"
IND = "test/inductor/test_minifier.py::"
CASES = (
    Case("dynamo_compile_error", DYN + "test_after_dynamo_compile_error", "dynamo", "ReluCompileError"),
    Case("dynamo_runtime_error", DYN + "test_after_dynamo_runtime_error", "dynamo", "ReluRuntimeError"),
    Case("dynamo_accuracy_error", DYN + "test_after_dynamo_accuracy_error", "dynamo", "AccuracyError", True),
    Case("dynamo_non_leaf_compile_error", DYN + "test_after_dynamo_non_leaf_compile_error", "dynamo",
         "TestingOnlyCompileError"),
    Case("dynamo_compile_backend_passes", DYN + "test_after_dynamo_compile_backend_passes", "dynamo", None),
    Case("dynamo_runtime_backend_passes", DYN + "test_after_dynamo_runtime_backend_passes", "dynamo", None),
    Case("dynamo_accuracy_backend_passes", DYN + "test_after_dynamo_accuracy_backend_passes", "dynamo", None, True),
    Case("dynamo_cpu_device_module", DYN + "test_cpu_device_module_after_dynamo", "dynamo", "ReluCompileError"),
    Case("dynamo_if_graph_minified", DYN + "test_if_graph_minified", "dynamo", "ReluCompileError", ops=("relu",)),
    Case("aot_compile_error", IND + "test_after_aot_cpu_compile_error", "aot", "CppCompileError"),
    Case("aot_accuracy_error", IND + "test_after_aot_cpu_accuracy_error", "aot", "AccuracyError", True),
    Case("aot_constant_in_graph", IND + "test_constant_in_graph", "aot", "AccuracyError", True),
    Case("aot_accuracy_vs_strict", IND + "test_accuracy_vs_strict_accuracy", "aot", "AccuracyError", True,
         ops=("relu",)),
    Case("aot_offload_to_disk", IND + "test_offload_to_disk", "aot", "AccuracyError", True),
    Case("aot_runtime_error", "test/inductor/test_minifier_isolate.py::test_after_aot_cpu_runtime_error", "aot", "",
         isolate=True),
    Case("aoti_compile_error", IND + "test_aoti_cpu_compile_error", "aot_inductor", "CppCompileError", ops=("relu",)),
    Case("aoti_compile_error_unflatten", IND + "test_aoti_cpu_compile_error_unflatten", "aot_inductor",
         "CppCompileError", ops=("relu",)),
    Case("aoti_accuracy_error", IND + "test_aoti_cpu_accuracy_error", "aot_inductor", "AccuracyError", True,
         ops=("relu",)),
)
BY_NAME = {c.name: c for c in CASES}


def run_cmd(cmd, cwd, env=None, timeout=900):
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                       timeout=timeout)
    return p, time.perf_counter() - t


def ops_ok(case: Case, ops: list[str]) -> bool:
    # the test names the whole minified graph: exactly these ops, whatever namespace prints them
    if not case.ops:
        return True
    short = sorted(re.sub(r"^(torch\.(ops\.)?)?(aten\.)?|\.default$", "", o) for o in ops)
    return short == sorted(case.ops)


def error_named(case: Case, out: str) -> bool:
    """The repro's output names the failure the PyTorch test asserts: the error's name, or for an
    AccuracyError our repro's accuracy line (PyTorch's test asserts "" for a crash: any output)."""
    return (case.error if case.error != "AccuracyError" else "accuracy") in out


def run_ours(case: Case, work: Path, env: dict[str, str] | None = None) -> dict:
    shutil.copy(case.script, work / case.script.name)
    kd = f"{BIN}/kdiff | " if case.accuracy else ""
    cmd = (f"{BIN}/pt2kit capture -- {PY} {case.script.name} | {kd}{BIN}/minify -o repro.py > out.ndjson;"
           " echo ${PIPESTATUS[@]} > rcs")
    p, wall = run_cmd(["bash", "-c", cmd], work, env)
    recs = [json.loads(line) for line in (work / "out.ndjson").read_text().splitlines() if line.strip()]
    repro = next((r for r in recs if r.get("kind") == "repro"), None)
    row = {"wall_s": round(wall, 1), "rcs": (work / "rcs").read_text().split(), "ops": repro and repro.get("ops"),
           "stderr_tail": p.stderr.strip().splitlines()[-3:]}
    if case.error is None:
        # every step exits 0: a tool that could not run is no pass
        row["ok"] = repro is None and not (work / "repro.py").exists() and set(row["rcs"]) == {"0"}
        return row
    if repro is None or not (work / "repro.py").exists():
        row["ok"] = False
        return row
    r, _ = run_cmd([PY, "repro.py"], work, env)
    out = r.stdout + r.stderr
    row.update(repro_rc=r.returncode, repro_line=out.strip().splitlines()[-1:] if out.strip() else [],
               named=error_named(case, out))
    row["ok"] = r.returncode == 1 and row["named"] and ops_ok(case, repro.get("ops") or [])
    return row


