"""Whether a run of a candidate still fails as the failure it must show: the verdict of each kind, and
:mod:`.plan` names the functions that judge one failure. minify's workers judge every candidate by
:func:`outcome`; a repro's main is handed the same functions by name and embeds only those
(:mod:`..parent.embed`), so a query and the repro it becomes run the same code.

Guarantees: the verdict of an accuracy failure is kdiff's (torch.testing.assert_close's tolerances, then
PyTorch's float64 RMSE rule from torch._dynamo.utils.same, so rounding noise is not a failure;
pt2kit_portable's differs, NaN on both sides agreeing), against kdiff's float64 reference; a failure's
signature is an exception's type and normalised message, a signal, a non-finite kind, or a constraint and
op; a side that cannot run in the repro's own (``strict``) run is :class:`.loading.Untestable`, never a
verdict.
"""

import importlib
import re

import torch

from pt2kit.runtime.common.precision import use_precision
from pt2kit_portable import COMPILER_WRAPPERS, compiler_error, differs, exception_line, under_autocast

from . import plan
from .harness import run_eager, written
from .loading import Untestable


def outcome(module, inputs, backend, config, failure, dynamic=False, strict=False, train=False, grad=None, said=None):
    """(fails, signature, detail) of one candidate against the failure it must still show, judged by the
    functions :func:`.plan.sides` names (:func:`judged`). ``train``: each side runs a training step, and what is judged
    is the gradients of the inputs ``grad`` marks."""
    how = {role: getattr(importlib.import_module(m), name) for role, (m, name) in plan.sides(failure, backend, config,
                                                                                          train).items()}
    if failure["kind"] == "accuracy":
        return accuracy_judged(module, inputs, backend, config, failure, dynamic, strict, grad, how)
    return judged(module, inputs, backend, config, failure, dynamic, strict, grad, how, said)


def eager_side(module, inputs, failure, grad, how):
    """Eager's results on ``inputs`` (its own copy), under the precision settings the failure was judged under (the
    accuracy harness's, or the model's own) and the torch.autocast the script called the graph under, from seed 0
    as every side (a random op, dropout, draws alike, as in the original run)."""
    if failure.get("precision"):
        how["precision"](failure["precision"])
    torch.manual_seed(0)
    with how["under"](failure.get("autocast")):
        return run_eager(module, inputs, how["side"], grad)


def judged(module, inputs, backend, config, failure, dynamic, strict, grad, how, said=None):
    """(fails, signature, detail): eager, then the compiled side (each from one seed, on its own copy of the
    inputs), then ``how["verdict"]``; a compile error is judged by its signature. ``strict`` (the repro's own
    run): a side that cannot run raises Untestable rather than not failing: eager always, the compiled side
    where the failure is in what it computes, not in its compile. A crash where eager raises (``failure["eager"]``,
    that error's signature): eager must raise it, and ``said`` hears what eager did (the error's signature, or
    None where it returned) before the compiled side runs, which kills the process; it raising or returning
    instead is no crash. A missing error (eager raises ``failure["eager"]``): the compiled side returning is the
    failure; it raising anything, or eager not raising that error, is none."""
    kind, amp, expect = failure["kind"], failure.get("autocast"), failure.get("eager")  # amp: the autocast of the call
    eager_in, test_in = how["fresh"](inputs), how["fresh"](inputs)  # each side's own: what it writes is judged too
    try:
        eager = eager_side(module, eager_in, failure, grad, how)
    except Exception as e:  # a candidate the eager side cannot run is no repro of anything
        if expect is None or how["signature"](e) != expect:
            if strict:
                raise Untestable(f"eager cannot run the graph: {exception_line(e)}") from None
            return False, "eager: " + how["signature"](e), "eager fails"
        eager = None  # it raised as it must: what the compiled side does is the verdict
    if said is not None:
        said(expect if eager is None else None)
    try:
        with how["configured"](config), how["under"](amp):
            torch.manual_seed(0)
            test = how["compiled"](module, test_in, backend, dynamic, grad)
    except Exception as e:
        if eager is None:  # eager raised: the compiled side raising too is no crash
            sig = how["signature"](e)
            return False, "raises as eager does" if sig == expect else sig, str(e).strip()[:2000]
        if strict and kind != "compile-error":
            raise Untestable(f"the compiled side raised {exception_line(e)}, so its {kind} cannot be judged") from None
        sig, detail = how["signature"](e), str(e).strip()[:2000]
        if failure.get("check_str"):
            return kind == "compile-error" and failure["check_str"] in f"{sig} {detail}", sig, detail
        return kind == "compile-error" and sig == failure["signature"], sig, detail
    if eager is None:  # eager raised: the compiled side returning is a missing error, and no crash
        returns = f"the compiled side returns where eager raises {expect}"
        return (True, kind, returns) if kind == "missing-error" else (False, returns, "")
    wrote = written(inputs, eager_in, test_in)  # an input a side wrote in place is compared as an output is
    return how["verdict"](module, inputs, eager + [eager_in[i] for i in wrote], test + [test_in[i] for i in wrote],
                          failure, how, grad, wrote)


def accuracy_judged(module, inputs, backend, config, failure, dynamic, strict, grad, how):
    """(fails, signature, detail) of an accuracy failure, straight through: eager, the compiled side, then the float64
    reference (``how["float64"]``'s run of ``how["side"]``; none where it cannot run: differs says so where it needs
    one), each from one seed on its own copy of the inputs; then each output, and each input a side wrote in place
    (after the outputs), judged by pt2kit_portable's differs: kdiff's rule. ``strict`` (the repro's own run): a side
    that cannot run is Untestable, never a verdict."""
    amp = failure.get("autocast")  # the torch.autocast the script called the graph under: every side runs under it
    eager_in, test_in = how["fresh"](inputs), how["fresh"](inputs)  # each side's own: what it writes is judged too
    try:
        eager = eager_side(module, eager_in, failure, grad, how)
    except Exception as e:  # a candidate the eager side cannot run is no repro of anything
        if strict:
            raise Untestable(f"eager cannot run the graph: {exception_line(e)}") from None
        return False, "eager: " + how["signature"](e), "eager fails"
    try:
        with how["configured"](config), how["under"](amp):
            torch.manual_seed(0)
            test = how["compiled"](module, test_in, backend, dynamic, grad)
    except Exception as e:
        if strict:
            raise Untestable(f"the compiled side raised {exception_line(e)}, so its accuracy cannot be judged") from None
        return False, how["signature"](e), str(e).strip()[:2000]
    wrote = written(inputs, eager_in, test_in)  # an input a side wrote in place is compared as an output is
    try:
        torch.manual_seed(0)
        with how["under"](amp):  # it leaves float64 alone: the ops run as eager's do under it
            fp64 = how["float64"](module, how["fresh"](inputs), how["side"], grad, wrote)
    except Exception:
        fp64 = []
    test, eager = test + [test_in[j] for j in wrote], eager + [eager_in[j] for j in wrote]  # outputs, then writes
    for i, (t, r) in enumerate(zip(test, eager, strict=False)):
        why = differs(t, r, fp64[i] if i < len(fp64) else None, failure.get("ref", "eager"), failure.get("rule", "fp64"))
        if why:
            n = len(test) - len(wrote)
            return True, "accuracy", f"output {i}: {why}" if i < n else f"input {wrote[i - n]} as the run left it: {why}"
    return False, "passes", ""


def nonfinite_verdict(module, inputs, eager, test, failure, how, grad=None, wrote=()):
    """Whether the compiled side still holds the NaN/Inf of the failure (and eager too, where it did)."""
    got = nonfinite(test)
    eager_too = bool(nonfinite(eager))
    sig = f"{got} (eager too)" if got and eager_too else got
    return bool(got) and sig == failure["signature"], sig or "finite", ""


def passes(module, inputs, eager, test, failure, how, grad=None, wrote=()):
    """The compiled side ran: a compile error (or a crash) that did not happen."""
    return False, "passes", ""


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


def _subprocess_error(details, kind, text):
    """(type, message) of the error in a compile worker's traceback (``SubprocException.details``, the
    text of ``traceback.format_exc()``): the first line after the last frame; else (kind, text)."""
    lines = details.splitlines() if isinstance(details, str) else []
    last = max((i for i, ln in enumerate(lines) if ln.startswith("  ")), default=-1)
    for i in range(last + 1, len(lines)):
        if m := re.match(r"([A-Za-z_][\w.]*): ?(.*)", lines[i]):
            return m.group(1).rsplit(".", 1)[-1], "\n".join([m.group(2), *lines[i + 1:]])
    return kind, text


# the error a wrapper's text names (after Dynamo's "backend='...' raised:"), and what a signature masks, in order
_NAMED = re.compile(r"\s*(?:backend='[^']*' raised:\s*)?([A-Za-z_][\w.]*(?:Error|Exception|Failure)):\s*(.*)", re.S)
MASKS = ((r"(/[^\s:'\"]+)+", "<path>"), (r"0x[0-9a-fA-F]+", "<addr>"), (r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "<n>"),
         (r"'[A-Za-z_]\w*'", "'<name>'"))


def exception_signature(e):
    """``Type: message`` of the error that matters, numbers, addresses, paths and names normalised, so
    the same bug on a smaller graph or smaller shapes has the same signature."""
    e = compiler_error(e)  # torch wraps the compiler's error: the innermost is the bug (capture names it so too)
    kind, text = type(e).__name__, str(e)
    # a wrapper holding no exception names the compiler's in its text alone (each step reads past a prefix)
    while kind in COMPILER_WRAPPERS and (m := _NAMED.match(text)):
        kind, text = m.group(1).rsplit(".", 1)[-1], m.group(2)
    if kind == "SubprocException":  # Inductor's compile worker raised it: its error, not the wrapper
        kind, text = _subprocess_error(getattr(e, "details", ""), kind, text)
    return signed(kind, text)


def error_signature(e):
    """The signature of an error eager's side raised (no compiler ran there): :func:`exception_signature`'s for any
    exception that is neither one of torch's compiler wrappers nor a compile worker's, in fewer lines (the short
    forms' crash and missing error embed it)."""
    return signed(type(e).__name__, str(e))


def signed(kind, text):
    """``kind: first line of text``, numbers, addresses, paths and names masked (:func:`masked`)."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f"{kind}: {masked(first)[:200]}"


def masked(text):
    """``text``, its numbers, addresses, paths and names masked (:data:`MASKS`, in order)."""
    for pattern, mask in MASKS:
        text = re.sub(pattern, mask, text)
    return text


def settle(failure):
    """Run under the precision settings the failure was judged under (PyTorch's accuracy harness's, or the
    model's own), if it names them."""
    if failure.get("precision"):
        use_precision(failure["precision"])


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
    with torch.no_grad(), under_autocast(failure.get("autocast")):  # the ops' dtypes as the script's call gave them
        torch.compile(module, backend=aot_autograd(fw_compiler=fw))(*inputs)
    torch._dynamo.reset()
    return seen
