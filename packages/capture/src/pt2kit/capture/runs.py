"""Whether each kept model file runs where the script's graph did: loaded by the runtime's loader and run
eagerly once, after the command has ended, before its record is written.

A model file that calls ``torch.ops.prims.fma`` without the import that registers it, one whose load
raises, or one whose outputs differ in number, dtype or a static size from what Dynamo's example values say the
graph gave (a symbolic size is any call's: a dynamic graph's later call gives its own), is no model a tool can
judge the compiler on: its record says so (``captured.unrunnable``, one line), stderr says so, and kdiff and
minify answer "cannot judge" instead of "the model's own eager run fails". Those example values are torch's
fake-tensor propagation (meta kernels, decompositions): where that propagation of the file here gives the
graph's dtypes and sizes again, the file runs as the graph did, and eager differing from them is the
compiler's failure (a decomposition's wrong shape), kdiff's to judge, not a reason.

Guarantees: never in the user's process (one child of capture's, :func:`pt2kit.runtime.parent.child.run_in_child`,
for all kept graphs of the run: torch is imported once); that child is started with the command
(:func:`start`) and imports torch while the script runs, so the check after it costs the loads and runs
alone; it is killed unused when no graph was kept; a graph
the check could not finish (its child died or timed out) keeps ``unrunnable`` None and gets a warning,
never a verdict; a graph that calls a higher-order op is also traced by Dynamo (backend eager), which must
not raise. Not guaranteed: that a model file that runs gives the script's values (inputs past the
budget are seeded), nor that the compiled run of it works.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .records import Entry, label

TARGET = "pt2kit.capture.runs:work"
TIMEOUT = 300.0  # seconds for all graphs together: an eager forward each, after one import of torch
# a graph that calls a higher-order op is traced by Dynamo too: FX writes such an op's call in the graph's
# form, which Dynamo may not trace where it traced the script's (flex_attention's 9 arguments, not 7)
HOP = "torch.ops.higher_order."
# what the check's child imports while the script runs (the rest, Dynamo for a higher-order op, when needed)
PRELOAD = ("torch", "torch.utils._pytree", "pt2kit.runtime.common.modelfile")


def start() -> Any:
    """The check's child, started beside the command: on the GPU machine's 16 cores torch's import in it
    (2-3 s) overlaps the script's run instead of following it."""
    from pt2kit.runtime.parent.child import start_worker

    return start_worker(preload=PRELOAD)


def check(s: Any, entries: list[tuple[Any, Entry]], command: list[str], proc: Any = None) -> None:
    """Run each kept graph's model file (``(process, entry)`` pairs) in one child (``proc``, from
    :func:`start`, where it is alive) and set each entry's ``unrunnable`` to why it does not run (None
    where it does); say each one that does not."""
    # a call's line whose file is its graph's (a killed call, a raised first call) is that file again: each
    # file runs once, and the line said counts graphs, not lines
    todo: dict[str, list[Entry]] = {}
    for p, e in entries:
        if e.file is not None:
            todo.setdefault(str(p.dir / e.file), []).append(e)
    if not todo:
        return
    from pt2kit.runtime.parent.child import run_in_child

    files = [{"file": file, "grad": es[0].grad, "outputs": msgspec.to_builtins(es[0].outputs),
              "trace": any(op.startswith(HOP) for op in es[0].ops)} for file, es in todo.items()]
    n = len({(p.pid, e.seq if e.of is None else e.of) for p, e in entries if e.file is not None})
    s.say(f"checking that {n} captured graph{'s' * (n != 1)} run{'s' * (n == 1)} here")
    try:  # quiet: what the model files print is no news; a failure of ours never costs the records
        res = run_in_child(TARGET, {"files": files}, run=s.writer.run, store=str(s.store.root),
                           on_record=lambda raw: None, quiet=True, timeout=TIMEOUT, proc=proc)
    except Exception as e:
        s.warn(f"the captured graphs were not checked to run here ({type(e).__name__}: {e})")
        return
    reasons = res.value if res.crash is None else [res.notes.get(str(i), "?") for i in range(len(todo))]
    died = None if res.crash is None else res.crash.get("message") or "the check's process died"
    for i, (es, why) in enumerate(zip(todo.values(), reasons, strict=True)):
        if why == "?":  # the child died on this graph (the one it ran last), or before it
            if res.crash is not None and res.crash.get("stage") == f"run {i}" and not res.crash.get("message", "").startswith("timed out"):
                why = f"running it killed the process: {died}"
            else:
                s.warn(f"{label(es[0], command)}: not checked to run here ({died})")
                continue
        for e in es:
            e.unrunnable = why
        if why:
            s.warn(f"{label(es[0], command)}: the captured graph does not run here: {why}")


def work(payload: dict[str, Any], chan: Any) -> list[str | None]:
    """The child: each file loaded and run eagerly; why it does not run, or None, for each in order."""
    out = []
    for i, f in enumerate(payload["files"]):
        chan.stage(f"run {i}")
        why = _run_one(f["file"], f["grad"], f["outputs"]) or (_traced(f["file"], f["grad"]) if f.get("trace") else None)
        chan.note(str(i), why)
        out.append(why)
    return out


def _run_one(path: str, grad: bool, want: list[dict[str, Any] | None] | None) -> str | None:
    import torch
    from torch.utils._pytree import tree_leaves

    from pt2kit.runtime.common.errors import ModelFileError
    from pt2kit.runtime.common.modelfile import load_model

    try:
        loaded = load_model(path, from_stream=True)
        with torch.set_grad_enabled(grad):
            got = tree_leaves(loaded.call())
    except ModelFileError as e:
        return _why(str(e).replace(path, "the model file"), path)
    except Exception as e:
        return _why(f"{type(e).__name__}: {str(e).strip()}", path)
    if want is None:
        return None
    if len(got) != len(want):
        return f"it gives {len(got)} output(s), the graph gave {len(want)}"
    why = _unlike(got, want)
    # the graph's dtypes and shapes are Dynamo's example values: torch's fake-tensor propagation (meta kernels,
    # decompositions), which the compiler follows. Where that propagation of this very file here gives them
    # again, the file runs as the script's graph did, and eager disagreeing with it is the compiler's failure
    # (a decomposition's wrong shape), for kdiff to judge; where it does not, something of the script's (its
    # default dtype, a kernel it registered) is missing here, and the file is no model of that graph
    if why is not None and _unlike(_fake_leaves(loaded, grad), want) is None:
        return None
    return why


def _unlike(got: list[Any] | None, want: list[dict[str, Any] | None]) -> str | None:
    """How the output leaves ``got`` differ from the graph's (``want``, as many): the first that does, or None."""
    import torch

    if got is None or len(got) != len(want):
        return "?"
    for n, (g, w) in enumerate(zip(got, want, strict=True)):
        if w is None:
            continue
        if not isinstance(g, torch.Tensor):
            return f"output {n} is a {type(g).__name__}, the graph gave a {w['dtype']} tensor"
        # a jagged output's ragged size is its nested int (j1), which int() refuses: like a symbolic size
        # (None in ``want``), each call's own, so it is compared with nothing
        shape = [d if isinstance(d, int) else str(d) for d in g.shape]
        if str(g.dtype) != w["dtype"] or len(shape) != len(w["shape"]) or any(
                isinstance(d, int) and want is not None and d != want for d, want in zip(shape, w["shape"], strict=True)):
            return (f"output {n} is {str(g.dtype).removeprefix('torch.')}[{', '.join(map(str, shape))}], the graph gave "
                    f"{w['dtype'].removeprefix('torch.')}{w['shape']}")
    return None


def _fake_leaves(loaded: Any, grad: bool) -> list[Any] | None:
    """The file's output leaves as torch's fake-tensor propagation gives them here; None where it raises (a
    data-dependent size, an op with no meta kernel): then nothing is learnt from it."""
    import torch
    from torch.utils._pytree import tree_leaves

    from .torchapi import fake_run

    try:
        with torch.set_grad_enabled(grad):
            return tree_leaves(fake_run(lambda fake: loaded.call(inputs=fake), loaded.inputs))
    except Exception:
        return None


def _traced(path: str, grad: bool) -> str | None:
    """Why Dynamo cannot trace the model file (backend eager: no compiler runs), or None: a tool that
    compiles it would otherwise report Dynamo's crash on the file's form as the compiler's."""
    import torch

    from pt2kit.runtime.common.modelfile import load_model

    try:
        loaded = load_model(path, from_stream=True)
        torch.compiler.reset()
        with torch.set_grad_enabled(grad):
            loaded.call(torch.compile(loaded.model, backend="eager"))
    except Exception as e:
        return "Dynamo cannot trace it as it traced the script: " + _why(f"{type(e).__name__}: {str(e).strip()}", path)
    finally:
        torch.compiler.reset()
    return None


def _why(message: str, path: str) -> str:
    """One line: the error's first line, and the model file's own note on an op it cannot import."""
    line = message.split("\n", 1)[0].strip()
    try:
        notes = [x[2:] for x in open(path, encoding="utf-8").read().split("\n") if x.startswith("# op ")]
    except OSError:
        notes = []
    return f"{line} ({notes[0]})" if notes else line
