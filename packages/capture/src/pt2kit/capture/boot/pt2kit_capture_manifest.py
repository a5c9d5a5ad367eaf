"""A graph's manifest line, for the capture boot: who compiled it and where, its model file and tensors
written (before the backend runs: a backend that runs the graph may change its inputs in place), then
the line appended to ``p<pid>/graphs.ndjson`` once the backend returned or raised.

Runs inside the user's interpreter: stdlib + torch. Guarantees: one line per graph the backend got
(none for an attempt Dynamo traces again), whether the backend returned or raised (its error and
``stage``); a graph whose compiled code raises when called gets one more line (:func:`failed`, for
``pt2kit_capture_calls``, ``pt2kit_capture_backward`` and ``pt2kit_capture_patch_aoti``); files only for
the graphs ``--graphs`` keeps; a failure of ours is the line's ``capture_error``, never the user's
exception. Not guaranteed: the line of a graph whose process is killed while its backend compiles (the
parent reads it from ``compiling-<N>.json``, :func:`pt2kit_capture_running.compiling`), nor a whole line
from a process killed mid-write (the parent skips a broken one).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pt2kit_capture_backend as backends
import pt2kit_capture_contract as contract
import pt2kit_capture_process as process
import pt2kit_capture_running as running
import pt2kit_capture_torchapi as api
import pt2kit_capture_write as write

# pt2kit's one-line name of an exception, and which exceptions are Dynamo tracing again (the rule fxcheck's
# backend applies too); pt2kit capture copies the module beside this folder
from pt2kit_portable import compiler_error, exception_line, held_exception, is_dynamo_restart

# exceptions that say the generated code did not build (C++ or a GPU kernel's compiler), or a lowering failed
BUILD = {"CppCompileError", "CUDACompileError", "CompilationError", "TritonCompilationError"}
LOWERING = {"LoweringException", "MissingOperatorWithoutDecomp", "MissingOperatorWithDecomp"}
_STATE: dict[str, Any] = {"first": False, "referenced": set(), "run": None, "seq": 0}

def compile_through(line: dict[str, Any] | None, call: Any, stage: str = "compile") -> Any:
    """The user's compiler, run: the graph's manifest line appended once it returned or raised (with its
    error and the stage it failed at), dropped when Dynamo only raised to trace the frame again; marked
    compiling while it runs (a signal in the compiler names the graph: :func:`pt2kit_capture_running.compiling`)."""
    token = None if line is None else running.compiling(line, stage)
    try:
        out = call()
    except Exception as e:
        if line is not None:
            if is_dynamo_restart(e):
                discard(line)
            else:
                line.update(error=exception_line(compiler_error(e)), stage=failed_stage(e, stage))
                append(line)
        raise
    finally:
        running.compiled(token)
    if line is not None:
        if os.environ.get(contract.ENV_GRAPHS, "").strip() == "failing":  # its backend did not raise: not kept
            unselect(line)
        append(line)
    return out


def failed_stage(e: BaseException, stage: str) -> str:
    """``build`` where the generated code did not compile, ``lowering`` where Inductor could not lower an
    op, else ``stage`` (AOT Inductor's stages keep their own name). It scans the whole chain (a build error
    may sit under a non-wrapper), each link followed as every walk of it does (pt2kit_portable.held_exception)."""
    if stage != "compile":
        return stage
    seen: list[BaseException] = []
    while e is not None and e not in seen and len(seen) < 16:
        seen.append(e)
        e = held_exception(e)
    names = {c.__name__ for x in seen for c in type(x).__mro__}
    return "build" if names & BUILD else "lowering" if names & LOWERING else stage


def _ops(gm: Any, ops: dict[str, int]) -> int:
    """Count gm's call nodes (and its nested GraphModules') into ops; the number of call nodes."""
    n = 0
    for node in gm.graph.nodes:
        if node.op == "call_function":
            name = api.qualified_name(node.target)
        elif node.op == "call_method":
            name = f"Tensor.{node.target}"
        elif node.op == "call_module":
            name = type(getattr(gm, node.target, None)).__name__
        else:
            if node.op == "get_attr" and hasattr(getattr(gm, node.target, None), "graph"):
                n += _ops(getattr(gm, node.target), ops)
            continue
        ops[name] = ops.get(name, 0) + 1
        n += 1
    return n


def selected(compile_id: str | None) -> bool:
    """Whether --graphs keeps a graph of this compile id (``failing``: decided when its backend returns)."""
    graphs = os.environ.get(contract.ENV_GRAPHS, "all").strip() or "all"
    if graphs in ("all", "failing"):
        return True
    if graphs == "first":
        return not _STATE["first"]
    return compile_id in {g.strip() for g in graphs.split(",")}


def run_budget() -> Any:
    """This process's handle on the run's budget (one file under the scratch dir, shared by every process)."""
    if _STATE["run"] is None:
        limit = process.env_int(contract.ENV_RUN_BYTES)
        _STATE["run"] = write.RunBudget(Path(os.environ[contract.ENV_DIR]) / contract.RUN_BYTES, limit)
    return _STATE["run"]


def new_line(backend: str) -> dict[str, Any]:
    """A manifest line with what every graph has (who, where, the values policy) and nothing recorded yet."""
    values = os.environ.get(contract.ENV_VALUES, contract.DEFAULT_VALUES)
    return {
        "compile_id": None, "rank": process.rank(), "world": process.env_int("WORLD_SIZE"), "pid": os.getpid(),
        "argv": list(sys.argv), "backend": backend, "backend_code": None, "backend_in_script": False, "mode": None, "mode_options": {}, "cache_dir": None,
        "options": {}, "dynamic": None,
        "function": None, "source": None, "called_from": None, "cell": None, "grad": False, "autocast": [], "settings": {}, "code_settings": {}, "file": None, "tensors": [],
        "inputs": [], "nodes": 0, "ops": {}, "values": values if values in contract.VALUES else contract.DEFAULT_VALUES, "error": None,
        "capture_error": None, "selected": True, "over_run_budget": False, "stage": None, "call": None, "phase": None, "seq": 0, "of": None,
        "check": None,
        "outputs": None,
    }


def record(line: dict[str, Any], gm: Any, args: list[Any], what: str, names: dict[str, str] | None = None,
           called: str = "what it was first called with", force: bool = False) -> None:
    """Fill the graph's settings, ops, model file and tensors into line (which names it already); ``force``:
    written whatever --graphs says (a failing call of a graph it kept)."""
    if not force and not selected(line["compile_id"]):  # --graphs does not keep it: its line only (it was compiled)
        line["selected"] = False
        return
    _STATE["first"] = True
    budget = process.env_int(contract.ENV_MAX_VALUE_BYTES)
    line["settings"] = api.settings()
    line["code_settings"] = backends.code_settings()  # hooks and decompositions: code, named where it lives
    line["nodes"] = _ops(gm, line["ops"])
    where = process.pdir()
    where.mkdir(parents=True, exist_ok=True)
    stem = "g" + re.sub(r"\W", "_", line["compile_id"] or "x")
    stem = next(s for s in (stem if i == 0 else f"{stem}_{i}" for i in range(10**6))
                if not (where / f"{s}.py").exists())
    fake = [n.target for n, a in zip([n for n in gm.graph.nodes if n.op == "placeholder"], args, strict=False)
            if api.is_fake(a)]
    # each header line is written as one comment (write.escape): a name's line breaks never end it
    header = [f"pt2kit capture: one graph {what} in the user's program",
              "command: " + shlex.join(getattr(sys, "orig_argv", sys.argv)),
              f"compile id: {line['compile_id']}  function: {line['function']}  source: {line['source']}",
              f"backend: {line['backend']}  mode: {line['mode']}  values: {line['values']}",
              f"model: the graph as the backend got it; example_inputs: {called}"]
    if fake:
        header.append(f"values not real: {', '.join(fake)}: the backend got them as fake tensors (no values; "
                      "DDP's per-bucket graphs); seeded in [-1, 1] (floats) or 0 (integers)")
    run = run_budget()
    run.spent = False
    line["file"], line["tensors"], line["inputs"] = write.write(
        gm, args, where, stem, header, line["values"], contract.DEFAULT_MAX_VALUE_BYTES if budget is None else budget, names, run,
        line.get("autocast") or [])
    line["over_run_budget"] = run.spent
    line["outputs"] = api.output_meta(gm)


def failed(line: dict[str, Any], gm: Any, args: list[Any], call: int | None, e: BaseException, stage: str,
           own: bool = False, names: dict[str, str] | None = None, phase: str = "forward") -> None:
    """Append the line of ``line``'s graph failing at ``stage`` (call number ``call``; in its ``phase``, the
    backward of that call's forward), with a model file of that call's inputs where the graph's own file
    does not hold them (``own``: never does; and ``gm`` is there to write one; ``names``: the parameter
    path of an exported program's placeholders)."""
    try:
        new = dict(line, error=exception_line(compiler_error(e)), stage=stage, call=call,
                   capture_error=None, of=line.get("seq"), phase=phase if stage == "run" else None)
        kept = line.get("selected") or os.environ.get(contract.ENV_GRAPHS, "").strip() == "failing"
        if gm is not None and kept and (own or (call or 1) > 1 or not line.get("file")):
            new.update(file=None, tensors=[], inputs=[], ops={}, nodes=0, selected=True, over_run_budget=False)
            try:
                record(new, gm, args, "whose compiled code raised when called", names,
                                called=f"what call {call} got, the call that raised", force=True)
            except Exception as x:
                new["capture_error"] = exception_line(x)
        append(new)
    except Exception:
        pass


def append(line: dict[str, Any]) -> None:
    """One line to graphs.ndjson, flushed at once (a script that dies later keeps it)."""
    _STATE["referenced"].update(line.get("tensors") or ())
    line["seq"], _STATE["seq"] = _STATE["seq"], _STATE["seq"] + 1
    try:
        add_line(contract.MANIFEST, line)
    except Exception:
        pass


def add_line(name: str, line: dict[str, Any]) -> None:
    """One JSON line appended to ``p<pid>/NAME``, flushed at once."""
    where = process.pdir()
    where.mkdir(parents=True, exist_ok=True)
    with open(where / name, "a") as f:
        f.write(json.dumps(line, default=str) + "\n")


def unselect(line: dict[str, Any]) -> None:
    """--graphs failing, and the backend returned: the graph's model file and the tensor files no graph
    kept before it names are removed (their bytes given back to the run's budget); its line stays."""
    where = process.pdir()
    for rel in [line["file"], *(t for t in line["tensors"] if t not in _STATE["referenced"])] if line["file"] else ():
        try:
            size = (where / rel).stat().st_size
            (where / rel).unlink()
            if rel != line["file"]:
                run_budget().release(size)
        except OSError:
            pass
    line.update(selected=False, file=None, tensors=[])


def discard(line: dict[str, Any]) -> None:
    """Dynamo traces the frame again: forget this attempt's model file (its tensors may be shared)."""
    if line.get("selected"):
        _STATE["first"] = False  # under --graphs first, the graph traced again is still the first
    if line.get("file"):
        try:
            (process.pdir() / line["file"]).unlink()
        except OSError:
            pass
