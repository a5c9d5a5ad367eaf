"""minify's ``--mode train``, worker side: the model runs as the one training step every tool runs
(:func:`pt2kit.runtime.worker.training.train_step`), its forward and backward aten graphs are captured
(:func:`pt2kit.runtime.worker.aotgraphs.training_graphs`: the graphs Inductor compiles, split by its partitioner,
each with the real arguments of its first call), and the compiled step is judged against eager's.

Guarantees: eager, float64 and compiled steps each start from the same seed and cleared gradients, so
a dropout draws alike on every side where Inductor's ``fallback_random`` is on (the harness precision);
a failure says the phase it shows in: ``forward`` (an error raised by the forward call, an output or
what the step wrote in place into its inputs, parameters or buffers beyond the verdict or non-finite: each
step starts from the model file's values, :class:`pt2kit.runtime.worker.written.Start`) or ``backward`` (an error raised by the backward, or only gradients
failing); outputs are judged before gradients, so a forward bug is never blamed on the backward. Not
guaranteed: the user's own loss (the loss is each floating output's mean, summed).
"""

from __future__ import annotations

import contextlib
from typing import Any

from pt2kit.runtime.worker.accuracy import differs

from .. import ir
from ..judge import harness, verdicts
from .toir import to_ir


def _params(model: Any) -> list[tuple[str, Any]]:
    import torch

    if not isinstance(model, torch.nn.Module):
        return []
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def step(loaded: Any, fn: Any, seed: int, send: Any = None) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """(outputs, gradients named grad.<parameter> and grad.inputs[i]) of one training step of ``fn`` on the
    model's inputs: an input that required grad in the script (the model file makes it so) gets its gradient
    judged as a parameter's, named as kdiff names it (a bug in the gradient of ``x`` alone, a function's
    input, was "passes ... outputs and gradients"). ``send`` hears {"t": "phase", "phase": "backward"} once
    the forward returned (a crash after it is the backward's)."""
    import torch

    from pt2kit.runtime.common.tensors import unjag
    from pt2kit.runtime.worker.outputs import flatten
    from pt2kit.runtime.worker.training import train_step

    params = _params(loaded.model) + [(n, x) for n, x in flatten(loaded.inputs, "inputs")
                                      if isinstance(x, torch.Tensor) and x.requires_grad]
    for _, x in params:
        if not x.is_leaf:  # an input that was no leaf in the script keeps its gradient as a leaf does
            x.retain_grad()

    def forward() -> Any:
        out = loaded.call(fn)
        if send is not None:
            send({"t": "phase", "phase": "backward"})
        return out

    torch.manual_seed(seed)
    out = train_step(forward, [p for _, p in params])
    harness.sync()
    outputs = unjag([(n, t.detach() if isinstance(t, torch.Tensor) else t) for n, t in flatten(out)])
    grads = [(f"grad.{n}", p.grad.detach().clone()) for n, p in params if p.grad is not None]
    for _, p in params:
        p.grad = None
    return outputs, grads


def graphs(loaded: Any, job: Any, backend: Any = None) -> tuple[list[ir.Graph], list[Any]]:
    """(the graphs to search, the forward aten graphs with their arguments: fxcheck's profile reads them).
    Inductor and aot_eager: each forward aten graph, then each backward (phase ``backward``, its inputs
    the forward's saved values and the tangents); then Dynamo's graphs, which the search runs as training
    steps where the failure is the backward's (a backend of the user's file is handed these alone: its
    backward is what it makes of them; ``backend`` (loaded) that is an ``aot_autograd`` object gets the
    aten graphs too, a backward one compiled by its ``bw_compiler``)."""
    from pt2kit.runtime.common.config import apply_config
    from pt2kit.runtime.shims.torchapi import backward_compiler
    from pt2kit.runtime.worker.aotgraphs import training_graphs
    from pt2kit.runtime.worker.training import train_step

    # an aot_autograd backend of the user's file compiles aten graphs too: a backward one with its
    # bw_compiler (harness.compile_backward), so its backward bug is searched in the backward graph
    users = job.backend not in ("inductor", "aot_eager") and backward_compiler(backend) is None
    dynamo: list[Any] = []
    params = [p for _, p in _params(loaded.model)]
    with apply_config(job.config):
        try:
            captured = training_graphs(loaded.model, lambda fn: train_step(lambda: loaded.call(fn), params),
                                       dynamo=dynamo)
        except Exception:  # AOTAutograd cannot trace it: the failure is before the aten graphs
            captured = []
    out: list[ir.Graph] = []
    if not users:
        out += [to_ir(g.forward, g.forward_args, i, job.device) for i, g in enumerate(captured)]
        out += [to_ir(g.backward, g.backward_args, i, job.device, phase="backward")
                for i, g in enumerate(captured) if g.backward is not None]
    if not (job.profile is not None or job.failure == "violation"):
        for i, (gm, args) in enumerate(dynamo):
            with contextlib.suppress(Exception):  # a graph that will not run on its own arguments is not searched
                out.append(to_ir(gm, args, i, job.device, level="dynamo"))
    return out, [(g.forward, g.forward_args) for g in captured]


def judge(loaded: Any, job: Any, backend: Any, send: Any) -> dict[str, Any]:
    """How the compiled training step fails against eager's: the worker's ``seen`` (kind, signature,
    detail, and the phase it shows in)."""
    import torch

    from pt2kit.runtime.common.config import apply_config
    from pt2kit.runtime.common.errors import UsageError
    from pt2kit.runtime.common.text import exception_line
    from pt2kit.runtime.shims.torchapi import reset_dynamo
    from pt2kit.runtime.worker.written import Start

    start = Start(loaded.model, loaded.inputs)  # each step from here; what it writes in place is judged too
    try:
        eager = step(loaded, None, job.seed)
        eager[0].extend(start.written(loaded.model, loaded.inputs))
    except UsageError:
        raise
    except Exception as e:  # the model's own bug, as kdiff says it: bad input, not a failure to minify
        raise UsageError(f"{loaded.label}: the model's own eager training step fails, so there "
                         f"is no compiler failure to minify (the model, not the compiler): {exception_line(e)}") from None
    phase = {"now": "forward"}

    def heard(m: dict[str, Any]) -> None:
        phase["now"] = m["phase"]
        send(m)

    start.restore()
    try:
        reset_dynamo()
        with apply_config(job.config):
            test = step(loaded, torch.compile(loaded.model, backend=backend), job.seed, heard)
            test[0].extend(start.written(loaded.model, loaded.inputs))
    except Exception as e:
        return {"kind": "compile-error", "signature": verdicts.exception_signature(e), "detail": str(e)[:2000],
                "phase": phase["now"]}
    finally:
        reset_dynamo()
        start.restore()  # the search's own runs start where the model file does
    start.pair(eager[0], test[0])  # a write one side did alone, at its starting value on the other
    for where, (t_side, e_side) in (("forward", (test[0], eager[0])), ("backward", (test[1], eager[1]))):
        got = verdicts.nonfinite([t for _, t in t_side])
        if got and job.failure in ("auto", "nan") and not verdicts.nonfinite([t for _, t in e_side]):
            return {"kind": "nan", "signature": got, "phase": where}
    pairs = list(zip(test[0] + test[1], eager[0] + eager[1], strict=False))
    if job.ref == "eager" and not any(differs(t, r, None) for (_, t), (_, r) in pairs):
        return {"kind": None, "detail": "passes assert_close, outputs and gradients"}
    fp64 = _float64_step(loaded, job.seed, start)
    for (name, t), (_, r) in pairs:
        why = differs(t, r, fp64.get(name), job.ref, job.rule)
        if why:
            return {"kind": "accuracy", "signature": "accuracy", "detail": f"{name}: {why}",
                    "phase": "backward" if name.startswith("grad.") else "forward"}
    return {"kind": None, "detail": "passes the float64 rule, outputs and gradients"}


def _float64_step(loaded: Any, seed: int, start: Any) -> dict[str, Any]:
    """Outputs, what it wrote in place (``start``'s leaves) and gradients of the training step of a float64
    copy of the model (empty where it fails)."""
    from pt2kit.runtime.common.modelfile import LoadedModel
    from pt2kit.runtime.worker.accuracy import float64_copy, float64_mode

    with contextlib.suppress(Exception):
        m64, in64 = float64_copy(loaded.model, loaded.inputs)
        with float64_mode():
            outs, grads = step(LoadedModel(m64, in64, loaded.file, loaded.entry, loaded.label, grads=loaded.grads),
                               None, seed)
        return dict(outs + start.written(m64, in64) + grads)
    return {}
