"""repro.py as text: the minimal graph as module code (the user's lines as comments), its input specs,
backend, config and failure, then ``pt2kit_portable`` (the float64 reference, the verdict on a leaf, the
loss, exception and signal names), pt2kit.runtime.precision, :mod:`.harness` and :mod:`.answer`, each
verbatim (:func:`embedded_source`).

Guarantees: the repro imports only torch and the standard library, and its docstring names all else it
needs (the torch it was made on, the device, a backend file, the config it sets); it exits 1 while the
failure is present, 0 once it is gone, 125 (``git bisect run``'s "cannot test") where it cannot run.
Nothing a record or a name holds becomes code: each string enters the docstring or a comment through
pt2kit_portable's ``escape`` (the boot's model files are written by it too), a value as a literal."""

from __future__ import annotations

import pprint
import re
import textwrap
from pathlib import Path
from typing import Any

import pt2kit_portable
from pt2kit.runtime import precision
from pt2kit.runtime.config import from_literal, literal

from . import ir
from .records import config_strings

PORTABLE = Path(pt2kit_portable.__file__)
HARNESS = Path(__file__).with_name("harness.py")
PRECISION = Path(precision.__file__)
ANSWER = Path(__file__).with_name("answer.py")
LOADING = Path(__file__).with_name("loading.py")


def _embedded() -> str:
    """loading.py, harness.py without its import of loading's names, then answer.py without its import of
    harness's names (each defined just above the file that imports them)."""
    harness = re.sub(r"^from \.loading import (\([^)]*\)|.*)\n", "", HARNESS.read_text(), count=1, flags=re.M)
    answer = re.sub(r"^from \.harness import (\([^)]*\)|.*)\n", "", ANSWER.read_text(), count=1, flags=re.M)
    return LOADING.read_text() + "\n\n" + harness + "\n\n" + answer


def embedded_source() -> str:
    """What every repro.py carries verbatim below its graph and data: the code a query ran, in the order
    each part needs the one before (harness takes the float64 run and the verdict from pt2kit_portable, the
    precision settings from precision). The parts share one namespace: their names differ."""
    return "\n".join([
        f"# ---- pt2kit_portable (version {pt2kit_portable.VERSION}), verbatim: the float64 reference and the "
        "verdict on an output leaf kdiff judged by, the loss, exception and signal names ----",
        PORTABLE.read_text(),
        "# ---- pt2kit.runtime.precision, verbatim: the precision settings FAILURE['precision'] names ----",
        PRECISION.read_text(),
        "# ---- pt2kit minify's loading.py, harness.py and answer.py, verbatim: files, inputs, runs, verdicts, "
        "exit codes ----",
        _embedded(),
        ""])


def _backend_file(backend: str) -> tuple[str, str] | None:
    """(absolute path, name) of a ``FILE.py:NAME`` backend; None for a named one."""
    if ":" not in backend:  # a name torch registers, or aoti
        return None
    path, _, name = backend.rpartition(":")
    return str(Path(path).resolve()), name


def _precision_line(failure: dict[str, Any]) -> str:
    p = failure.get("precision")
    if not p:
        return ""
    if p == precision.HARNESS:
        return " Judged under PyTorch's accuracy-harness precision (TF32 off, deterministic cuDNN, fallback_random)."
    return f" Judged under the model's own precision: {', '.join(precision.differences(p)) or 'the harness settings'}."


def _needs(c: ir.Candidate, backend: str, config: dict[str, dict[str, str]], torch_version: str) -> str:
    devices = sorted({s.device for s in c.inputs if s.kind in ir.TENSORS}) or ["cpu"]
    out = [f"torch (made on {torch_version}), Python's standard library", f"device {', '.join(devices)} (REPRO_DEVICE="
           f"cuda moves the inputs)"]
    if (file := _backend_file(backend)) is not None:
        out.append(f"the backend file {file[0]} (its {file[1]}), loaded by that path")
    settings = " ".join(f"{k}={v}" for k, v in config_strings(config).items())
    out.append(f"the config it sets itself: {settings}" if settings else "no config")
    return "; ".join(out)


def _config_line(config: dict[str, dict[str, str]]) -> str:
    """CONFIG on one line, each value the literal of the value the workers ran (a tuple stays a tuple):
    written back from the value, never copied from the record's text, so that text cannot be code."""
    return "CONFIG = {" + ", ".join(f"{m!r}: {{" + ", ".join(f"{k!r}: {literal(from_literal(v))}" for k, v in s.items())
                                    + "}" for m, s in config.items()) + "}"


def _doc(text: object) -> str:
    """A record's or a name's text inside the repro's docstring: pt2kit_portable's one escaping rule."""
    return pt2kit_portable.escape(text, string=True)


def _graph_words(level: str, phase: str) -> str:
    if phase == "backward":
        return "backward aten graph"
    return "the graph Dynamo hands the backend" if level == "dynamo" else "forward aten graph"


def _phase_line(phase: str) -> str:
    """How the graph runs, where it is not run as it is an inference graph."""
    if phase == "backward":
        return "\nRuns: the backward graph alone (AOTAutograd's), its inputs the forward's saved values and the tangents."
    if phase == "joint":
        return ("\nRuns: a training step (forward, the loss: each floating output's mean, summed; backward); the "
                "gradients\nof the inputs GRAD marks (those that required grad in the real run) are judged.")
    return ""


def render(c: ir.Candidate, *, failure: dict[str, Any], backend: str, config: dict[str, dict[str, str]],
           model: str, graph: int, torch_version: str, dynamic: bool, seed: int, tool_version: str,
           level: str = "aten", subgraph: str | None = None, phase: str = "forward") -> str:
    """``phase``: the graph's (:class:`.ir.Graph`): a ``joint`` one runs as a training step, its gradients judged."""
    against = "a float64 run" if failure.get("ref") == "eager64" else "eager"
    rule = "assert_close (kdiff --verdict close)" if failure.get("rule") == "close" else \
        "PyTorch's float64 accuracy rule"
    out = "gradient" if failure.get("phase") == "backward" else "output"
    what = {"accuracy": f"the compiled {out} differs from {against} beyond {rule}",
            "compile-error": f"the compiled side raises {failure.get('signature', '')}",
            "crash": f"the process dies with {failure.get('signature', '')}",
            "nan": f"the compiled {out} holds {failure.get('signature', '')}",
            "violation": f"{failure.get('constraint', '')}: {failure.get('op', '')} in the graph"}[failure["kind"]]
    ops = _doc(", ".join(dict.fromkeys(c.ops)))
    file = _backend_file(backend)
    # every string below from a record, a name or the user's files passes _doc: none can close the docstring
    sub = f", its subgraph {_doc(subgraph)}" if subgraph else ""
    needs = textwrap.fill("Needs: " + _doc(_needs(c, backend, config, torch_version)) + ".", 110,
                          break_long_words=False, break_on_hyphens=False)  # never inside an escape
    head = f'''#!/usr/bin/env python3
"""A standalone repro made by pt2kit minify {_doc(tool_version)} on torch {_doc(torch_version)}.

Model: {_doc(model)} ({_graph_words(level, phase)} {int(graph)}{sub}), cut to {int(c.nodes)} op(s): {ops}.
Failure: {_doc(what)}.{_phase_line(phase)}
Backend: {_doc(backend)}{", dynamic shapes" if dynamic else ""}.{_doc(_precision_line(failure))}
{needs}

`python repro.py` exits 1 while the bug is present, 0 once it is fixed, and 125 with one line on stderr
where it cannot run here (no such device, torch or the backend file missing or not loading, eager
unable to run the graph): what `git bisect run python repro.py` reads as "cannot test this revision".
"""
import math
import operator
import sys
from dataclasses import dataclass
from typing import Any

try:
    import torch
except Exception as e:  # a torch that does not import (a broken build in a bisect): cannot test here
    print(f"repro: cannot test here: import torch: {{type(e).__name__}}: {{e}}".splitlines()[0], file=sys.stderr)
    raise SystemExit(125) from None


'''
    body = [c.source,
            "# harness.make_inputs specs: (\"tensor\", shape, stride, dtype, device, low, high[, real values]) or "
            "(\"scalar\", value); (\"jagged\", <a tensor's spec of its values>, offsets, ragged_dim[, real values])",
            "INPUTS = " + pprint.pformat([s.as_tuple() for s in c.inputs], width=110, compact=True),
            *(["# which INPUTS the training step differentiates: those that required grad in the real run",
               "GRAD = " + pprint.pformat(c.grad, width=110, compact=True)] if phase == "joint" else []),
            "# the torch.compile backend the failure was seen with" + (": (file, name), loaded by main" if file else ""),
            f"BACKEND = {file or backend!r}",
            _config_line(config),
            "FAILURE = " + pprint.pformat(failure, width=110),
            "", "",
            embedded_source(),
            'if __name__ == "__main__":',
            f"    raise SystemExit(main(Repro, INPUTS, BACKEND, CONFIG, FAILURE, dynamic={bool(dynamic)!r}, seed={int(seed)!r}"
            + (", train=True, grad=GRAD" if phase == "joint" else "") + "))",
            ""]
    return head + "\n".join(body)
