"""What runs a candidate graph: its inputs, its eager, float64 and compiled sides. minify's workers
import it, and every repro.py embeds by source the functions of it its check reaches (:mod:`..parent.embed`), so a
query and the repro it becomes run the same code; :mod:`.verdicts` says whether a run still fails.

Guarantees (the repro's contract): imports only torch and the standard library besides pt2kit's, whose
names a repro carries by source; inputs come from a seeded generator and the specs written in the repro,
or, where the failure needs them, a small input's real values written there as literals (never a pickle);
the float64 reference is kdiff's (pt2kit_portable's float64_copy and float64_mode); a training step's loss
is pt2kit_portable's loss_of, every --mode train run's. Each side is one function of one signature
(``side(module, inputs, grad)``, ``compiled(module, inputs, backend, dynamic, grad)``), so a repro is
handed only the ones its failure runs (:mod:`.plan`).
"""

import contextlib
import os
import tempfile

import torch

from pt2kit.runtime.worker.aotilock import compile_package
from pt2kit.runtime.worker.written import unchanged
from pt2kit_portable import (
    _drawn,
    _uniform,
    as_input,
    autocast_off,
    backward_compiler,
    copy_inputs,
    float64_copy,
    float64_mode,
    held,
    is_leaf,
    loss_of,
    make_tensor,
    run_backward,
    storage_reach,
    to_float64,
)

# -- inputs ------------------------------------------------------------------------------------


def make_inputs(specs, seed=0, device=None):
    """One value per spec: ("tensor", shape, stride, dtype, device, lo, hi[, values[, "non-leaf"]]) or
    ("scalar", value); lo and hi the range of the real values (None: standard normal floats, 0 and 1 for
    integers); values, where the failure needs them, the real values themselves (row-major; "nan", "inf",
    "-inf" as text; None: seeded); "non-leaf": the input was no leaf in the real run (the output of an op
    on a tensor that requires grad), and is made so again (pt2kit_portable.as_input); last, a dict
    {"offset": N, "storage": M} where the input sat at an offset into its storage, or in a larger one,
    {"view_of": J} where it shared a storage with input J in the script: it is made a view of J's storage
    (its values are J's storage's there).
    Each tensor is laid out as the script had it, its strides kept (expanded, overlapping), by
    pt2kit_portable.make_tensor, which capture's model files run too.
    ("jagged", shape, stride, dtype, device, lo, hi, offsets, ragged_dim[, values]): a torch.nested jagged
    tensor, its values made as a tensor's spec says and split at the offsets given."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for spec in specs:
        if spec[0] == "scalar":
            out.append(spec[1])
        elif spec[0] == "jagged":
            _, shape, stride, dtype, dev, lo, hi, offsets, ragged_dim, *exact = spec
            values = _tensor(shape, stride, dtype, device or dev, lo, hi, exact, g)
            offsets = torch.tensor(offsets, dtype=torch.int64, device=values.device)
            out.append(torch.nested.nested_tensor_from_jagged(values, offsets, jagged_dim=ragged_dim))
        else:
            t = _laid(spec, out, g, device)
            out.append(as_input(t, True, leaf=False) if "non-leaf" in spec[8:9] else t)
    return out


def make_shared_inputs(specs, seed=0, device=None):
    """:func:`make_inputs` where no spec is jagged or a non-leaf (:func:`.plan.shared`): the same tensors, made by the
    same calls, real values at an offset and a view of another input's storage too."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for s in specs:
        out.append(s[1] if s[0] == "scalar" else _laid(s, out, g, device))
    return out


def _laid(spec, out, g, device):
    """A tensor spec's tensor, its real values where given, else seeded, in its layout, or a view of the storage of
    ``out``'s input its ``view_of`` names (its values are that storage's there); a "non-leaf" mark is the caller's."""
    _, shape, stride, dtype, dev, lo, hi, *rest = spec
    layout = rest.pop() if rest and isinstance(rest[-1], dict) else {}
    if "view_of" in layout:  # on the very tensor (one _base for both, as AOTAutograd needs where one is written),
        base = out[layout["view_of"]]  # but no autograd history of a non-leaf's
        return torch.as_strided(base.detach() if base.requires_grad else base, shape, stride, layout.get("offset", 0))
    return make_tensor(shape, stride, getattr(torch, dtype), device or dev, lo, hi, g, real_values(rest[:1], dtype, shape),
                       layout.get("offset", 0), layout.get("storage", 0))


def no_autocast(state=None):
    """:func:`pt2kit_portable.under_autocast` where the script called the graph under no torch.autocast: nothing
    entered (:mod:`.plan`'s role ``under``, so a repro of such a failure carries no autocast code)."""
    return contextlib.nullcontext()


def make_plain_inputs(specs, seed=0, device=None):
    """:func:`make_inputs` where every spec is a scalar or a seeded tensor of its own storage (:func:`.plan.plain`):
    the same values, drawn from the same generator in the same order, as pt2kit_portable's make_tensor draws a
    storage it is given no values for (the storage its layout reaches, then the layout over it)."""
    g = torch.Generator().manual_seed(seed)
    return [s[1] if s[0] == "scalar" else _drawn(storage_reach(*s[1:3]), getattr(torch, s[3]), *s[5:7], g)
            .to(device or s[4]).as_strided(*s[1:3]) for s in specs]


def make_uniform_inputs(specs, seed=0, device=None):
    """:func:`make_plain_inputs` where every tensor is floating and its range known (:func:`.plan.uniform`): the same
    values, drawn by the same call of that branch of pt2kit_portable's ``_drawn``."""
    g = torch.Generator().manual_seed(seed)
    return [s[1] if s[0] == "scalar" else _uniform(storage_reach(*s[1:3]), getattr(torch, s[3]), *s[5:7], g)
            .to(device or s[4]).as_strided(*s[1:3]) for s in specs]


def make_valued_inputs(specs, seed=0, device=None):
    """:func:`make_inputs` where every spec is a scalar or a tensor of its own storage, seeded or given its real
    values (:func:`.plan.valued`): the same tensors, made by the same calls, without the code for a storage
    offset, a view of another input, a non-leaf or a jagged tensor."""
    g = torch.Generator().manual_seed(seed)
    return [s[1] if s[0] == "scalar" else (_drawn(storage_reach(*s[1:3]), getattr(torch, s[3]), *s[5:7], g)
            if len(s) < 8 or s[7] is None else held(real_values(s[7:8], s[3], s[1]), *s[1:3], getattr(torch, s[3])))
            .to(device or s[4]).as_strided(*s[1:3]) for s in specs]


def make_laid_inputs(specs, seed=0, device=None):
    """:func:`make_plain_inputs` where a seeded tensor may sit at an offset into its storage or in a larger one (a slice
    of a larger tensor, its spec's last item ``{"offset": N, "storage": M}``: :func:`.plan.laid`): the same values, as
    pt2kit_portable's make_tensor draws and lays them out, without the code for real values, a view of another input,
    a non-leaf or a jagged tensor."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for s in specs:
        if s[0] == "scalar":
            out.append(s[1])
            continue
        at = s[8] if len(s) > 8 else {}
        n = max(at.get("storage", 0), storage_reach(*s[1:3], at.get("offset", 0)))
        out.append(_drawn(n, getattr(torch, s[3]), *s[5:7], g).to(device or s[4])
                   .as_strided(*s[1:3], at.get("offset", 0)))
    return out


def _tensor(shape, stride, dtype, dev, lo, hi, exact, g, offset=0, storage=0):
    """One tensor of a spec: its real values where given, else seeded ones, in its layout."""
    values = real_values(exact, dtype, shape)
    return make_tensor(shape, stride, getattr(torch, dtype), dev, lo, hi, g, values, offset, storage)


def real_values(exact, dtype, shape):
    """A spec's real values (``exact``: empty, or their list alone in it: row-major, "nan", "inf", "-inf" as text) as
    a tensor of ``shape``, float64 for a floating ``dtype`` (its name); None where there are none."""
    if exact and exact[0] is not None:
        return torch.tensor([float(v) if isinstance(v, str) else v for v in exact[0]],
                            dtype=torch.float64 if getattr(torch, dtype).is_floating_point else None).reshape(shape)


# -- running -----------------------------------------------------------------------------------


def fresh(inputs):
    """A copy of every tensor input, with its strides: each run gets its own, since a graph may write
    into an input (an in-place op on what was an intermediate before the graph was cut, the copy_ into an
    input that ends a graph keeping its input mutations), and the run after it would otherwise read changed
    values and fail where the backend did nothing wrong. pt2kit_portable's copy_inputs: inputs that shared a
    storage share the copy (a write into one is read through the other, as in the script), an expanded or
    overlapping layout stays one, a non-leaf input stays one."""
    return copy_inputs(list(inputs))


def fresh_plain(inputs):
    """:func:`fresh` for the inputs :func:`make_plain_inputs` makes (each tensor a leaf that requires no grad, on a
    storage of its own: :func:`.plan.plain`): the same copies, each storage copied and the layout kept."""
    return [torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage().clone(), t.storage_offset(),
                                                                t.shape, t.stride()) if isinstance(t, torch.Tensor)
            else t for t in inputs]


def written(inputs, *runs):
    """The positions of the tensor inputs some run wrote in place (its copy of the input, ``fresh``'s, no longer
    holds the input's values): after the run each is compared as an output is, as kdiff judges what a call
    writes (pt2kit.runtime.worker.written), so a write one side drops or misplaces fails where the outputs agree."""
    return [i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.layout == torch.strided
            and not t.is_nested and any(not unchanged(run[i], t) for run in runs)]


def dense(outputs):
    """Each output as the tensor a verdict compares: a jagged tensor's ``values()`` (kdiff compares its
    offsets too; both sides of a candidate's run split at the offsets it was fed)."""
    return [t.values() if isinstance(t, torch.Tensor) and t.layout == torch.jagged else t for t in outputs]


def eager_outputs(module, inputs, grad=None):
    """``module`` run on ``inputs`` under no_grad: its outputs, a list (``grad``: as :func:`gradients` takes it)."""
    with torch.no_grad():
        return list(module(*inputs))


def run_eager(module, inputs, side, grad=None):
    """What ``side`` (:func:`eager_outputs`, or :func:`gradients` for a training step) gives eagerly."""
    out = side(module, inputs, grad)
    sync()
    return dense(out)


def run_float64(module, inputs, side, grad=None, wrote=()):
    """:func:`run_eager` on the float64 reference kdiff judged the failure against (pt2kit_portable's
    float64_copy of module and inputs, run under its float64_mode); then the inputs at the positions ``wrote``
    names, as the run left them (:func:`written`)."""
    module, inputs = float64_copy(module, inputs)
    with float64_mode():
        out = side(module, inputs, grad)
    sync()
    return dense(out) + [inputs[i] for i in wrote]


def run_float64_cast(module, inputs, side, grad=None, wrote=()):
    """:func:`run_float64` for a repro's graph float64_mode changes nothing of (:func:`.plan.float64_run`): the
    float64 inputs run as they are, as PyTorch's after_aot repros run theirs (an op with no float64 kernel raises
    here, where the mode runs it in float32: then there is no float64 run, and differs says so). The inputs alone
    (float64_copy's to_float64): a repro's module holds no tensor, its constants made in its forward."""
    inputs = to_float64(inputs)
    out = side(module, inputs, grad)
    sync()
    return dense(out) + [inputs[i] for i in wrote]


def gradients(run, inputs, grad=None):
    """A training step of ``run``: the floating inputs ``grad`` marks (one bool per input: those that
    required grad in the real step, so never a BatchNorm buffer, which batch_norm refuses to
    differentiate; None: every floating input) leaves that require grad, then :func:`step`, its backward
    outside any autocast (a forward under the script's: its backward outside, as loss.backward() is)."""
    marks = [True] * len(inputs) if grad is None else grad
    inputs = [as_input(x, True, is_leaf(x)) if g and isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x, g in zip(inputs, marks, strict=True)]
    return step(run, inputs, autocast_off)


def step(run, inputs, outside=contextlib.nullcontext):
    """Forward, the loss (:func:`pt2kit_portable.loss_of`), backward under ``outside()``: the gradients of the
    ``inputs`` that require grad (zeros where none reached one), in input order. Seeded: a dropout draws the same
    mask on every side (Inductor's fallback_random draws eager's numbers)."""
    wrt = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    torch.manual_seed(0)
    with torch.enable_grad():
        out = run(*inputs)
        loss = loss_of(list(out) if isinstance(out, (list, tuple)) else [out])
        if loss is None or not wrt:
            return []
        with outside():
            return list(torch.autograd.grad(loss, wrt, allow_unused=True, materialize_grads=True))


def sync():
    """Wait for the GPU: a kernel's device-side error (an index out of range) is raised by the run that
    launched it, not by the next one to wait (which would blame the compiled side for eager's)."""
    if torch.cuda.is_initialized():  # False where torch has no CUDA
        torch.cuda.synchronize()


# -- the compiled side: one function per way of running it (plan.compiled_side picks) ---------


def compile_and_run(module, inputs, backend, dynamic=False, grad=None):
    """The outputs of ``module`` compiled by a torch.compile backend (name or callable), under no_grad."""
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(module, backend=backend, dynamic=dynamic or None)(*inputs)
        out = dense(out) if isinstance(out, (list, tuple)) else dense([out])
        sync()
    torch._dynamo.reset()
    return out


def compile_train(module, inputs, backend, dynamic=False, grad=None):
    """A training step through the compiled module (the backend compiles its backward too): the
    gradients of the inputs ``grad`` marks (:func:`gradients`)."""
    torch._dynamo.reset()
    out = dense(gradients(torch.compile(module, backend=backend, dynamic=dynamic or None), inputs, grad))
    sync()
    torch._dynamo.reset()
    return out


def compile_backward(module, inputs, backend, dynamic=False, grad=None):
    """``module``, a backward graph, compiled by an ``aot_autograd`` backend's backward compiler as
    AOTAutograd hands it one (compiled as an inference graph it would reach the forward compiler alone);
    by other backends as :func:`compile_and_run` compiles it."""
    bw = backward_compiler(backend)
    if bw is None:
        return compile_and_run(module, inputs, backend, dynamic)
    torch._dynamo.reset()
    out = dense(run_backward(bw, module, inputs))
    sync()
    return out


def compile_aoti(module, inputs, backend="aoti", dynamic=False, grad=None):
    """The outputs of ``module`` exported, packaged by AOT Inductor, loaded and run, under no_grad."""
    torch._dynamo.reset()
    with torch.no_grad():
        out = aoti_run(torch.export.export(module, tuple(inputs)), inputs)
        out = dense(out) if isinstance(out, (list, tuple)) else dense([out])
        sync()
    torch._dynamo.reset()
    return out


def aoti_run(ep, args, kwargs=None):
    """Package ``ep`` with AOT Inductor, load the package, run it (:func:`aoti_loaded`)."""
    return aoti_loaded(ep)(*args, **(kwargs or {}))


def aoti_loaded(ep):
    """``ep`` packaged by AOT Inductor into a folder of its own (under its program's lock:
    :func:`compile_package`), the package loaded."""
    with tempfile.TemporaryDirectory() as d:
        path = compile_package(ep, os.path.join(d, "m.pt2"))
        return torch._inductor.aoti_load_package(path)  # loaded: the loader holds its own copy of the package's files
