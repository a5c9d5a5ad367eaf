"""``pt2kit capture --check nan|accuracy``: every call of a compiled graph judged in the script's own
process, and the inputs of the first call that fails kept, with its step (the graph's call number).

Capture alone keeps a graph's first call; a backend whose softmax overflows once training has grown the
logits (step 2), a NaN at step 1200, read "pass" downstream. With a check, the backend's compiled
callable is wrapped (:class:`Checked`): each call runs as before, then its outputs are judged:

* ``nan``: a compiled output holds NaN or Inf where eager, the same graph run on the same inputs, holds
  a finite value. Outputs are scanned every call (``isfinite``); eager runs only where one is not
  finite, so the check costs a pass over the outputs. A NaN eager makes too is the model's own
  (README, Outcomes): not a failure.
* ``accuracy``: the compiled outputs against eager's by kdiff's verdict (``pt2kit_portable.differs``:
  assert_close, then PyTorch's float64 RMSE rule, the float64 run made only where assert_close fails).
  Every call then runs eager once more (and its inputs are copied): about twice the step.

The gradients a graph's compiled backward gives (AOTAutograd's, run from ``loss.backward()``) are judged
the same way against eager's backward of the graph, fed the same incoming gradients
(:class:`CheckedBackward`, called by ``pt2kit_capture_backward``): a NaN or a wrong value that shows only
in gradients is that call failing.

The first failing call's inputs (the script's weights at that call included) are written as a model
file of their own (:func:`keep`, under ``--values``), and a manifest line names it with ``call``, ``of``
(its graph's line) and ``check``, as ``pt2kit_capture_calls`` names a call that raised; that graph is
not judged again.

Runs inside the user's interpreter: stdlib + torch + pt2kit_portable. Guarantees: the compiled call
gets the same arguments and its result (or exception) passes unchanged; eager runs under ``no_grad`` on
copies of the inputs (an input the compiled call wrote into is copied before the call: seen by its
version counter on an earlier call, every input on the first), with the RNG state of every device of
the inputs restored after it; a failure of ours stops the check of that graph, never the script.
Not guaranteed: a graph with random ops (dropout) compared by ``accuracy`` draws other numbers in eager
(flagged as a failure: check it with ``nan``); an input the compiled call wrote into without a version
bump on an earlier call is judged, and written, with the values it holds after the call.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pt2kit_capture_contract as contract
import pt2kit_capture_manifest as manifest

from pt2kit_portable import copy_inputs, differs, float64_copy, float64_mode, undefined_values


def mode() -> str | None:
    """The check ``--check`` asked for (``PT2KIT_CAPTURE_CHECK``), or None."""
    value = os.environ.get(contract.ENV_CHECK, "").strip()
    return value if value in contract.CHECKS else None


def watch(gm: Any, line: dict[str, Any] | None) -> Checked | None:
    """A checker for this graph (before its backend runs: a copy of the graph as Dynamo made it, passes
    of the backend may rewrite the original), or None without ``--check`` or a line to record under."""
    how = mode()
    if how is None or line is None or line.get("capture_error"):
        return None
    try:
        return Checked(how, graph_copy(gm, meta=True), line)
    except Exception:
        return None


def graph_copy(gm: Any, meta: bool) -> Any:
    """A GraphModule of a copy of gm's graph, sharing its attributes; each node's meta (the user's line,
    Dynamo's source of a parameter: what the model file writes) a shallow copy, or empty: a deepcopy of
    it would copy every example value it holds."""
    import torch

    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    for node in graph.nodes if not meta else ():
        node.meta = {}
    return torch.fx.GraphModule(gm, graph)


def leaves(out: Any, name: str = "out") -> list[tuple[str, Any]]:
    """(name, tensor) of every tensor in the graph's outputs (a tuple or list, nested)."""
    import torch

    if isinstance(out, torch.Tensor):
        return [(name, out)]
    if isinstance(out, (tuple, list)):
        return [x for i, o in enumerate(out) for x in leaves(o, f"{name}[{i}]")]
    return []


def _versions(args: Any) -> list[int | None]:
    import torch

    out: list[int | None] = []
    for a in args:
        try:
            out.append(a._version if isinstance(a, torch.Tensor) else None)
        except Exception:  # an inference tensor keeps no version
            out.append(None)
    return out


def _copies(args: list[Any]) -> list[Any]:
    """Copies of a call's inputs by every tool's rule (pt2kit_portable.copy_inputs: inputs that shared a
    storage share the copy, so a write into one is read through the other as in the call; each in its layout,
    an expanded one stays expanded, where a copy_ into it is refused; requires_grad and leaf or not kept), a
    Parameter too (``parameters=True``, as a training step's are): the graph may write into it."""
    return list(copy_inputs(list(args), parameters=True))


class Checked:
    """The backend's compiled callable, each call judged until one fails (or the check fails itself)."""

    def __init__(self, how: str, ref: Any, line: dict[str, Any]) -> None:
        self.how, self.ref, self.line = how, ref, line
        self.calls = 0
        self.on = True
        self.written: set[int] = set()  # inputs a call wrote into (their version moved)

    def wrap(self, compiled: Any) -> Any:
        def checked(*args: Any, **kwargs: Any) -> Any:
            if not self.on or kwargs:
                return compiled(*args, **kwargs)
            self.calls += 1
            try:
                before = _versions(args)
                keep = {i for i, v in enumerate(before) if v is not None and (self.calls == 1 or i in self.written
                                                                               or self.how == "accuracy")}
                saved = dict(zip(sorted(keep), _copies([args[i] for i in sorted(keep)]), strict=True))
            except Exception:
                self.on = False
                return compiled(*args)
            out = compiled(*args)
            try:
                self._after(args, out, before, saved)
            except Exception:
                self.on = False
            return out

        checked._pt2kit_checked = True
        return checked

    def _after(self, args: Any, out: Any, before: list[int | None], saved: dict[int, Any]) -> None:
        import torch

        after = _versions(args)
        moved = {i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a is not None and a != b}
        self.written |= moved
        got = leaves(out)
        if self.how == "nan" and all(bool(torch.isfinite(t.detach()).all()) for _, t in got
                                     if t.is_floating_point() or t.is_complex()):
            return
        inputs = [saved.get(i, a) for i, a in enumerate(args)]  # the values this call was given
        why = self._judge(got, inputs)
        if why:
            self.on = False
            keep(self.ref, self.line, self.calls, inputs, f"{self.how}: {why}")

    def _eager(self, inputs: list[Any]) -> list[tuple[str, Any]]:
        """The graph run eagerly on copies of ``inputs``, under no_grad, the RNG state put back after; an
        output whose values no op defined (torch.empty's memory: pt2kit_portable.undefined_values) left out,
        so never judged: eager and a correct compile differ there."""
        import torch

        devices = sorted({a.device.index or 0 for a in inputs if isinstance(a, torch.Tensor) and a.is_cuda})
        with torch.random.fork_rng(devices=devices), torch.no_grad(), undefined_values() as seen:
            out = leaves(self.ref(*_copies(inputs)))
        return [(n, t) for n, t in out if not seen.made_by(t)]

    def _judge(self, got: list[tuple[str, Any]], inputs: list[Any]) -> str:
        """Why this call fails the check ("" when it passes)."""
        ref = dict(self._eager(inputs))
        if self.how == "nan":
            for name, t in got:
                e = ref.get(name)
                if not (t.is_floating_point() or t.is_complex()) or e is None or e.shape != t.shape:
                    continue
                why = nonfinite_where_eager_finite(t, e)
                if why:
                    return f"{name}: {why}"
            return ""
        return self._accuracy(got, ref, inputs)

    def _accuracy(self, got: list[tuple[str, Any]], ref: dict[str, Any], inputs: list[Any]) -> str:
        """kdiff's verdict on each output leaf (pt2kit_portable.differs), the float64 run made once, where
        a leaf fails assert_close."""
        fp64: dict[str, Any] | None = None
        for name, t in got:
            e = ref.get(name)
            if e is None:
                continue
            if not differs(t, e, rule="close"):
                continue
            if fp64 is None:
                fp64 = self._float64(inputs)
            why = differs(t, e, fp64.get(name))
            if why:
                return f"{name}: {why}"
        return ""

    def _float64(self, inputs: list[Any]) -> dict[str, Any]:
        """The graph's outputs run in float64 (kdiff's reference), on copies; {} where it cannot run."""
        import torch

        try:
            model, wide = float64_copy(graph_copy(self.ref, meta=False), _copies(inputs))
            devices = sorted({a.device.index or 0 for a in inputs if isinstance(a, torch.Tensor) and a.is_cuda})
            with torch.random.fork_rng(devices=devices), torch.no_grad(), float64_mode():
                return dict(leaves(model(*wide)))
        except Exception:
            return {}


class CheckedBackward:
    """The gradients a graph's compiled backward gives, judged (--check): called by
    :mod:`pt2kit_capture_backward` with the call's inputs, the gradients that came in (one per output of
    the compiled forward) and those it gave (one per input). ``nan``: a gradient holding NaN or Inf where
    eager's backward of the same graph, on the same inputs and incoming gradients, holds a finite value
    (scanned each step; eager runs only on a non-finite one). ``accuracy``: each gradient against eager's
    by kdiff's verdict (the float64 backward made only where assert_close fails). Where AOTAutograd's
    inputs or outputs are not the graph's one for one (an input it deduplicated, an output it added for a
    mutation), the step is not judged."""

    def __init__(self, forward: Checked) -> None:
        self.forward = forward

    def judge(self, call: int, args: list[Any], tangents: Any, got: Any) -> None:
        import torch

        f = self.forward
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        if not f.on or len(got) != len(args):
            return
        grads = [(i, g) for i, g in enumerate(got) if isinstance(g, torch.Tensor) and g.is_floating_point()]
        if f.how == "nan" and all(bool(torch.isfinite(g.detach()).all()) for _, g in grads):
            return
        ref = _grads(f.ref, args, tangents)
        fp64: dict[int, Any] | None = None
        for i, g in grads:
            e = ref.get(i)
            if e is None or e.shape != g.shape:
                continue
            why = ""
            if f.how == "nan":
                why = nonfinite_where_eager_finite(g, e)
            else:
                if differs(g, e, rule="close"):
                    fp64 = _grads(f.ref, args, tangents, wide=True) if fp64 is None else fp64
                    why = differs(g, e, fp64.get(i))
            if why:
                f.on = False
                keep(f.ref, f.line, call, args, f"{f.how}: the gradient of input {i} ({_input_name(f.line, f.ref, i)}): {why}")
                return


def nonfinite_where_eager_finite(got: Any, eager: Any) -> str:
    """--check nan's rule, for an output and a gradient alike: the elements of ``got`` that are NaN or Inf where
    ``eager``'s are finite, counted ("" where none). A NaN or Inf eager makes too, whatever it is there, is the
    model's own (README, Outcomes)."""
    import torch

    bad = ~torch.isfinite(got.detach()) & torch.isfinite(eager.to(got.device))
    return f"{int(bad.sum())} of {got.numel()} values non-finite (NaN or Inf) where eager's are finite" \
        if bool(bad.any()) else ""


def _input_name(line: dict[str, Any], gm: Any, i: int) -> str:
    """Input ``i`` as the model file names it: the script's parameter (``0.weight``), else the placeholder."""
    written = line.get("inputs") or []
    if i < len(written) and (written[i].get("parameter") or written[i].get("buffer")):
        return written[i].get("parameter") or written[i].get("buffer")
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    return names[i] if i < len(names) else f"input {i}"


def _grads(gm: Any, args: list[Any], tangents: Any, wide: bool = False) -> dict[int, Any]:
    """The gradient of each input of ``args`` that requires grad, eager's backward of ``gm`` (in float64 with
    ``wide``) on copies of them, fed ``tangents``; {} where it cannot run or the outputs do not match them."""
    import torch

    try:
        inputs = _copies(list(args))
        want = [i for i, a in enumerate(inputs) if isinstance(a, torch.Tensor) and a.requires_grad]
        model, run = graph_copy(gm, meta=False), inputs
        if wide:
            model, run = float64_copy(model, [a.detach() if isinstance(a, torch.Tensor) else a for a in inputs])
            run = [r.requires_grad_() if i in want else r for i, r in enumerate(run)]
        devices = sorted({a.device.index or 0 for a in inputs if isinstance(a, torch.Tensor) and a.is_cuda})
        with torch.random.fork_rng(devices=devices), torch.enable_grad():
            with float64_mode() if wide else contextlib.nullcontext():
                outs = [t for _, t in leaves(model(*run))]
            if len(outs) != len(tangents):
                return {}
            pairs = [(o, t) for o, t in zip(outs, tangents, strict=True) if isinstance(t, torch.Tensor) and o.requires_grad]
            got = torch.autograd.grad([o for o, _ in pairs], [run[i] for i in want],
                                      [t.to(o.dtype) for o, t in pairs], allow_unused=True)
        return {i: g for i, g in zip(want, got, strict=True) if g is not None}
    except Exception:
        return {}


def keep(ref: Any, line: dict[str, Any], call: int, inputs: list[Any], check: str) -> None:
    """The graph's line once more, for call number ``call``, which failed ``check``: a model file of ``ref``
    (the graph as Dynamo made it) with ``inputs``, what that call was given (written under --values, and
    whatever --graphs says: a failing call is kept as a failing graph is)."""
    new = dict(line, call=call, check=check, of=line.get("seq"), stage=None, error=None, capture_error=None,
               file=None, tensors=[], inputs=[], ops={}, nodes=0, selected=True, over_run_budget=False)
    try:
        manifest.record(new, ref, inputs, f"whose call {call} failed pt2kit capture --check {check}",
                        called=f"what call {call} got, the first that failed --check", force=True)
    except Exception as e:
        new["capture_error"] = manifest.exception_line(e)
    manifest.append(new)
