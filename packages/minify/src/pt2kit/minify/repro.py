"""repro.py as text: the minimal graph as module code (the user's lines as comments), its input specs,
backend, config and failure, then :mod:`.harness` verbatim. Runs with only torch installed; exit 1
while the failure is present, 0 once it is gone."""

from __future__ import annotations

import pprint
from pathlib import Path
from typing import Any

from pt2kit.runtime import precision

from . import ir

HARNESS = Path(__file__).with_name("harness.py")
PRECISION = Path(precision.__file__)


def _backend_lines(backend: str) -> list[str]:
    if backend in ("inductor", "aot_eager", "eager", "aoti"):
        return [f"BACKEND = {backend!r}"]
    path, _, name = backend.rpartition(":")
    return ["import importlib.util  # the torch.compile backend the failure was seen with",
            f"_spec = importlib.util.spec_from_file_location('backend_file', {str(Path(path).resolve())!r})",
            "_mod = importlib.util.module_from_spec(_spec)",
            "_spec.loader.exec_module(_mod)",
            f"BACKEND = _mod.{name}"]


def _precision_line(failure: dict[str, Any]) -> str:
    p = failure.get("precision")
    if not p:
        return ""
    if p == precision.HARNESS:
        return " Judged under PyTorch's accuracy-harness precision (TF32 off, deterministic cuDNN, fallback_random)."
    return f" Judged under the model's own precision: {', '.join(precision.differences(p)) or 'the harness settings'}."


def render(c: ir.Candidate, *, failure: dict[str, Any], backend: str, config: dict[str, dict[str, Any]],
           model: str, graph: int, torch_version: str, dynamic: bool, seed: int, tool_version: str,
           level: str = "aten") -> str:
    against = "a float64 run" if failure.get("ref") == "eager64" else "eager"
    what = {"accuracy": f"the compiled output differs from {against} beyond PyTorch's float64 accuracy rule",
            "compile-error": f"the compiled side raises {failure.get('signature', '')}",
            "crash": f"the process dies with {failure.get('signature', '')}",
            "nan": f"the compiled output holds {failure.get('signature', '')}",
            "violation": f"{failure.get('constraint', '')}: {failure.get('op', '')} in the graph"}[failure["kind"]]
    ops = ", ".join(dict.fromkeys(c.ops))
    head = f'''#!/usr/bin/env python3
"""A standalone repro made by pt2kit minify {tool_version} on torch {torch_version}.

Model: {model} ({"the graph Dynamo hands the backend" if level == "dynamo" else "forward aten graph"} {graph}), cut to {c.nodes} op(s): {ops}.
Failure: {what}.
Backend: {backend}{", dynamic shapes" if dynamic else ""}.{_precision_line(failure)} Needs only torch: `python repro.py` exits 1 while
the bug is present and 0 once it is fixed (REPRO_DEVICE=cuda moves the inputs).
"""
import math
import operator

import torch

'''
    body = [c.source,
            "# harness.make_inputs specs: (\"tensor\", shape, stride, dtype, device, low, high[, real values]) or "
            "(\"scalar\", value)",
            "INPUTS = " + pprint.pformat([s.as_tuple() for s in c.inputs], width=110, compact=True),
            *_backend_lines(backend),
            "CONFIG = " + pprint.pformat(config, width=110),
            "FAILURE = " + pprint.pformat(failure, width=110),
            "", "",
            "# ---- pt2kit.runtime.precision, verbatim: the precision settings FAILURE['precision'] names ----",
            PRECISION.read_text(),
            "# ---- pt2kit minify's harness.py, verbatim: inputs, runs, verdicts ----",
            HARNESS.read_text(),
            "",
            'if __name__ == "__main__":',
            f"    raise SystemExit(main(Repro, INPUTS, BACKEND, CONFIG, FAILURE, dynamic={dynamic!r}, seed={seed!r}))",
            ""]
    return head + "\n".join(body)
