"""What runs a candidate graph and says whether it still fails: minify's workers import it, and every
repro.py embeds this file's text verbatim, so a query and the repro it becomes run the same code (the
user's files and the config it compiles under are loaded by :mod:`.loading`, embedded just above it).

Guarantees (the repro's contract): imports only torch and the standard library; inputs come from a
seeded generator and the specs written in the repro, or, where the failure needs them, a small input's
real values written there as literals (never a pickle); the verdict of an accuracy
failure is kdiff's (torch.testing.assert_close's tolerances, then PyTorch's float64 RMSE rule from
torch._dynamo.utils.same, so rounding noise is not a failure; pt2kit.runtime.accuracy.differs, NaN on
both sides agreeing), against kdiff's float64 reference (pt2kit_portable's float64_copy and float64_mode,
embedded in the repro too); a training step's loss is pt2kit_portable's loss_of, every --mode train
run's; a failure's signature is an exception's type and normalised message, a signal, a non-finite kind, or a constraint and op; the
repro's answer is 1 (the failure is present) or 0 (it ran, and the failure is gone) only where every
side the failure needs ran to its verdict (:mod:`.answer`); anything else is 125.
"""

import contextlib
import importlib
import os
import re
import tempfile

import torch

from .loading import CODE, UNTESTABLE, Untestable, apply_config, load_code, load_file_attr  # noqa: F401

if "use_precision" not in globals():  # in minify's workers; a repro carries its text above this file's
    use_precision = importlib.import_module("pt2kit.runtime.precision").use_precision
if "float64_mode" not in globals():  # in minify's workers; a repro carries pt2kit_portable's text above this file's
    _portable = importlib.import_module("pt2kit_portable")  # not an import statement: a repro has none of ours
    exception_line, float64_copy, float64_mode = _portable.exception_line, _portable.float64_copy, _portable.float64_mode
    loss_of, signal_name = _portable.loss_of, _portable.signal_name  # signal_name: answer.py's, from here
    escape = _portable.escape  # answer.py's too: a path in its one stderr line
    as_input, is_leaf = _portable.as_input, _portable.is_leaf  # an input rebuilt as it was: leaf or not
    backward_compiler, run_backward = _portable.backward_compiler, _portable.run_backward

# -- inputs ------------------------------------------------------------------------------------


def make_inputs(specs, seed=0, device=None):
    """One value per spec: ("tensor", shape, stride, dtype, device, lo, hi[, values[, "non-leaf"]]) or
    ("scalar", value); lo and hi the range of the real values (None: standard normal floats, 0 and 1 for
    integers); values, where the failure needs them, the real values themselves (row-major; "nan", "inf",
    "-inf" as text; None: seeded); "non-leaf": the input was no leaf in the real run (the output of an op
    on a tensor that requires grad), and is made so again (pt2kit_portable.as_input).
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
            _, shape, stride, dtype, dev, lo, hi, *rest = spec
            t = _tensor(shape, stride, dtype, device or dev, lo, hi, [v for v in rest[:1] if v is not None], g)
            out.append(as_input(t, True, leaf=False) if "non-leaf" in rest[1:] else t)
    return out


def _tensor(shape, stride, dtype, dev, lo, hi, exact, g):
    """One tensor of a spec: its real values where given, else seeded ones."""
    dtype = getattr(torch, dtype)
    if exact:
        real = [float(v) if isinstance(v, str) else v for v in exact[0]]
        t = torch.tensor(real, dtype=torch.float64 if dtype.is_floating_point else None).reshape(shape).to(dtype)
    elif dtype.is_floating_point and lo is not None and hi is not None:
        # uniform over the range the real values took (their signs and scale, not their order)
        t = (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    elif dtype.is_floating_point or dtype.is_complex:
        t = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    elif dtype == torch.bool:
        t = torch.randint(0, 2, shape, generator=g).bool()
    else:
        lo = 0 if lo is None else int(lo)
        hi = lo + 1 if hi is None else max(int(hi), lo)
        t = torch.randint(lo, hi + 1, shape, generator=g, dtype=torch.int64).to(dtype)
    if list(stride) != list(torch.empty(shape).stride()) and all(s >= 0 for s in stride):
        # the graph was traced with a strided input (a transpose, a slice): Inductor specialises on it
        base = torch.empty_strided(shape, stride, dtype=dtype, device=dev)
        t = base.copy_(t.to(dev))
    return t.to(dev)


# -- running -----------------------------------------------------------------------------------


def fresh(inputs):
    """A copy of every tensor input, with its strides: each run gets its own, since a graph may write
    into an input (an in-place op on what was an intermediate before the graph was cut), and the run
    after it would otherwise read changed values and fail where the backend did nothing wrong."""
    out = []
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.is_nested:  # its sizes hold a nested int: no empty_strided
            t = t.clone()
        elif isinstance(t, torch.Tensor):
            was = t
            with torch.no_grad():
                try:
                    t = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device).copy_(t)
                except RuntimeError:  # overlapping strides (an expanded input) cannot be written: a plain clone
                    t = t.clone()
            t = as_input(t, was.requires_grad, is_leaf(was))  # a non-leaf input stays one
        out.append(t)
    return out


def dense(outputs):
    """Each output as the tensor a verdict compares: a jagged tensor's ``values()`` (kdiff compares its
    offsets too; both sides of a candidate's run split at the offsets it was fed)."""
    return [t.values() if isinstance(t, torch.Tensor) and t.layout == torch.jagged else t for t in outputs]


def run_eager(module, inputs, float64=False, train=False, grad=None):
    """The outputs of ``module`` on ``inputs`` (``train``: the gradients of a training step, :func:`gradients`);
    ``float64``: the float64 reference kdiff judged the failure against (pt2kit_portable's float64_copy
    and float64_mode)."""
    if float64:
        module, inputs = float64_copy(module, inputs)
    with float64_mode() if float64 else contextlib.nullcontext():
        if train:
            out = gradients(module, inputs, grad)
        else:
            with torch.no_grad():
                out = list(module(*inputs))
    sync()
    return dense(out)


def gradients(run, inputs, grad=None):
    """A training step of ``run``: the floating inputs ``grad`` marks (one bool per input: those that
    required grad in the real step, so never a BatchNorm buffer, which batch_norm refuses to
    differentiate; None: every floating input) leaves that require grad, forward, the loss, backward;
    their gradients (zeros where none reached one), in input order. Seeded: a dropout draws the same
    mask on every side (Inductor's fallback_random draws eager's numbers)."""
    marks = [True] * len(inputs) if grad is None else grad
    inputs = [as_input(x, True, is_leaf(x)) if g and isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x, g in zip(inputs, marks, strict=True)]
    wrt = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    torch.manual_seed(0)
    with torch.enable_grad():
        out = run(*inputs)
        loss = loss_of(list(out) if isinstance(out, (list, tuple)) else [out])
        if loss is None or not wrt:
            return []
        return list(torch.autograd.grad(loss, wrt, allow_unused=True, materialize_grads=True))


def sync():
    """Wait for the GPU: a kernel's device-side error (an index out of range) is raised by the run that
    launched it, not by the next one to wait (which would blame the compiled side for eager's)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def compile_and_run(module, inputs, backend, dynamic=False, train=False, grad=None, backward=False):
    """The compiled side: a torch.compile backend (name or callable), or "aoti" (export, package, load, run).
    ``train``: a training step through the compiled module (the backend compiles its backward too), the
    gradients of the inputs ``grad`` marks (:func:`gradients`). ``backward``: the module is a backward
    graph, which an ``aot_autograd`` backend's backward compiler compiles, as AOTAutograd hands it one
    (compiled as an inference graph it would reach the forward compiler alone); other backends as above."""
    torch._dynamo.reset()
    bw = backward_compiler(backend) if backward else None
    if bw is not None:
        out = dense(run_backward(bw, module, inputs))
        sync()
        return out
    if train:
        out = dense(gradients(torch.compile(module, backend=backend, dynamic=dynamic or None), inputs, grad))
        sync()
        torch._dynamo.reset()
        return out
    with torch.no_grad():
        if backend == "aoti":
            out = aoti_run(torch.export.export(module, tuple(inputs)), inputs)
        else:
            out = torch.compile(module, backend=backend, dynamic=dynamic or None)(*inputs)
        out = dense(out) if isinstance(out, (list, tuple)) else dense([out])
        sync()
    torch._dynamo.reset()
    return out


def aoti_run(ep, args, kwargs=None):
    """Package ``ep`` with AOT Inductor, load the package, run it. Compiling and packaging hold a lock
    that every process on the machine shares: the same program compiled by two processes at once is
    built in the same Inductor cache folder, and the package, zipped outside Inductor's own lock, can
    take the other's half-written files (seen: 2 of 60 side-by-side compiles on torch 2.13 ended in
    "parse error ... empty input" on load)."""
    warm_cpu_isa()
    with tempfile.TemporaryDirectory() as d:
        with _machine_lock("aoti"):
            path = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(d, "m.pt2"))
        return torch._inductor.aoti_load_package(path)(*args, **(kwargs or {}))


def warm_cpu_isa():
    """Inductor probes the CPU's vector ISA once per process, by compiling test programs (about 50 s on
    torch 2.11's CUDA build): done before the lock, so processes do not queue behind each other's probe."""
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa
    except ImportError:  # moved: the compile probes it, under the lock
        return
    pick_vec_isa()


def lock_path(name):
    """The file whose lock every process of this user on this machine takes for ``name``."""
    return os.path.join(tempfile.gettempdir(), f"pt2kit-{name}-{os.getuid() if hasattr(os, 'getuid') else 0}.lock")


@contextlib.contextmanager
def _machine_lock(name):
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    with open(lock_path(name), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# -- verdicts ----------------------------------------------------------------------------------

if "differs" not in globals():  # in minify's workers; a repro carries accuracy's verdict above this file's text
    differs = importlib.import_module("pt2kit.runtime.accuracy").differs  # kdiff's and benchrun's verdict too


def nonfinite(outputs):
    """"nan", "inf", "nan+inf" or "" for the outputs together."""
    kinds = set()
    for t in outputs:
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
            if bool(torch.isnan(t).any()):
                kinds.add("nan")
            if bool(torch.isinf(t).any()):
                kinds.add("inf")
    return "+".join(sorted(kinds))


_WRAPPERS = ("BackendCompilerFailed", "InductorError", "LoweringException", "InternalTorchDynamoError")


def _subprocess_error(details, kind, text):
    """(type, message) of the error in a compile worker's traceback (``SubprocException.details``, the
    text of ``traceback.format_exc()``): the first line after the last frame; else (kind, text)."""
    lines = details.splitlines() if isinstance(details, str) else []
    last = max((i for i, ln in enumerate(lines) if ln.startswith("  ")), default=-1)
    for i in range(last + 1, len(lines)):
        m = re.match(r"([A-Za-z_][\w.]*): ?(.*)", lines[i])
        if m:
            return m.group(1).rsplit(".", 1)[-1], "\n".join([m.group(2), *lines[i + 1:]])
    return kind, text


def exception_signature(e):
    """``Type: message`` of the error that matters, numbers, addresses, paths and names normalised, so
    the same bug on a smaller graph or smaller shapes has the same signature."""
    kind, text = type(e).__name__, str(e)
    for _ in range(4):  # torch wraps the backend's error; the innermost named error is the bug
        inner = e.__cause__ or e.__context__
        if kind in _WRAPPERS and inner is not None:
            e, kind, text = inner, type(inner).__name__, str(inner)
            continue
        m = re.match(r"\s*(?:backend='[^']*' raised:\s*)?([A-Za-z_][\w.]*(?:Error|Exception|Failure)):\s*(.*)", text,
                     re.S)
        if kind in _WRAPPERS and m:
            kind, text = m.group(1).rsplit(".", 1)[-1], m.group(2)
            continue
        break
    if kind == "SubprocException":  # Inductor's compile worker raised it: its error, not the wrapper
        kind, text = _subprocess_error(getattr(e, "details", ""), kind, text)
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    first = re.sub(r"(/[^\s:'\"]+)+", "<path>", first)
    first = re.sub(r"0x[0-9a-fA-F]+", "<addr>", first)
    first = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "<n>", first)
    first = re.sub(r"'[A-Za-z_]\w*'", "'<name>'", first)
    return f"{kind}: {first[:200]}"


def settle(failure):
    """Run under the precision settings the failure was judged under (PyTorch's accuracy harness's, or the
    model's own), if it names them."""
    if failure.get("precision"):
        use_precision(failure["precision"])


def is_backward(failure, train=False):
    """Whether the graph a failure is judged on is a backward graph run alone: a failure of the backward
    (``phase``) judged on no training step (which is a joint graph's)."""
    return failure.get("phase") == "backward" and not train


def outcome(module, inputs, backend, config, failure, dynamic=False, strict=False, train=False, grad=None):
    """(fails, signature, detail) of one candidate against the failure it must still show. ``strict``
    (the repro's own run): a side that cannot run raises Untestable rather than not failing: eager
    always, the compiled side where the failure is in what it computes, not in its compile. ``train``:
    each side runs a training step, and what is judged is the gradients of the inputs ``grad`` marks."""
    kind = failure["kind"]
    settle(failure)
    try:
        torch.manual_seed(0)  # each side from one seed: a random op (dropout) draws alike, as in the original run
        eager = run_eager(module, fresh(inputs), train=train, grad=grad)
    except Exception as e:  # a candidate the eager side cannot run is no repro of anything
        if strict:
            raise Untestable(f"eager cannot run the graph: {exception_line(e)}") from None
        return False, "eager: " + exception_signature(e), "eager fails"
    fp64 = None
    if kind == "accuracy":
        try:
            torch.manual_seed(0)
            fp64 = run_eager(module, fresh(inputs), float64=True, train=train, grad=grad)
        except Exception:
            fp64 = None
    try:
        with apply_config(config):
            torch.manual_seed(0)
            test = compile_and_run(module, fresh(inputs), backend, dynamic, train, grad, is_backward(failure, train))
    except Exception as e:
        sig, detail = exception_signature(e), str(e).strip()[:2000]
        if strict and kind != "compile-error":
            raise Untestable(f"the compiled side raised {exception_line(e)}, so its {kind} cannot be judged") from None
        if failure.get("check_str"):
            return kind == "compile-error" and failure["check_str"] in f"{sig} {detail}", sig, detail
        return kind == "compile-error" and sig == failure["signature"], sig, detail
    if kind == "nan":
        got = nonfinite(test)
        eager_too = bool(nonfinite(eager))
        sig = f"{got} (eager too)" if got and eager_too else got
        return bool(got) and sig == failure["signature"], sig or "finite", ""
    if kind == "accuracy":
        for i, (t, r) in enumerate(zip(test, eager, strict=False)):
            why = differs(t, r, fp64[i] if fp64 is not None and i < len(fp64) else None, failure.get("ref", "eager"),
                          failure.get("rule", "fp64"))
            if why:
                return True, "accuracy", f"output {i}: {why}"
        return False, "passes", ""
    return False, "passes", ""


def _misaligned(val, n, min_size=2):
    """fxcheck's align rule on one tensor: the dims (of at least ``min_size``) not a multiple of n."""
    shape = getattr(val, "shape", None)
    if shape is None:
        return []
    return [f"dim {i} of size {int(d)}" for i, d in enumerate(shape)
            if isinstance(d, int) and d >= min_size and d % n]


def violations(module, inputs, failure):
    """Where, in the aten graph the backend is handed, the violation still holds: the op (and dtype)
    it names, and for an ``align`` violation, only where that op's output has a dimension that is not
    a multiple of the tile size."""
    from torch._dynamo.backends.common import aot_autograd

    op, dtype, align = failure["op"], failure.get("dtype"), failure.get("align")
    seen = []

    def fw(gm, example):
        for n in gm.graph.nodes:
            val = n.meta.get("val")
            if n.op == "call_function" and str(n.target) in (op, op.rsplit(".", 1)[0]) and (
                    dtype is None or str(getattr(val, "dtype", "")).replace("torch.", "") == dtype):
                if not align:
                    seen.append(n.name)
                elif _misaligned(val, align):
                    seen.append(f"{n.name}: {', '.join(_misaligned(val, align))} not a multiple of {align}")
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(module, backend=aot_autograd(fw_compiler=fw))(*inputs)
    torch._dynamo.reset()
    return seen
