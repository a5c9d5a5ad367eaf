"""kdiff's records: `diff` fields, leaf by leaf, for two flattened output trees (and gradients), and the
`divergence` fields of a localised first diverging op."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from pt2kit.runtime.worker.accuracy import accuracy_rule, default_tolerances
from pt2kit.runtime.worker.outputs import is_plain
from pt2kit.schema import Accuracy, Metrics, Stats, Store, Tie
from pt2kit.schema.records import num
from pt2kit_portable import RNG_STATE_RETURNS

from .metrics import compare


def metrics_record(c: Any) -> Metrics:
    return Metrics(numel=c.numel, max_abs=num(c.max_abs), mean_abs=num(c.mean_abs), max_rel=num(c.max_rel),
                   rmse=num(c.rmse), mismatches=c.mismatches, mismatch_share=c.mismatch_share, nan_ref=c.nan_ref,
                   nan_test=c.nan_test, inf_ref=c.inf_ref, inf_test=c.inf_test)


@dataclass
class Verdict:
    """How a leaf is judged: ``rule`` "fp64" (PyTorch's accuracy rule, needs ``fp64`` and ``baseline``
    leaves) or "close" (assert_close against the reference alone); ``ties`` explain what fails after a near-tie."""

    rule: str = "close"
    fp64: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    baseline_name: str = "eager"
    tie: Any = None  # a ties.TieSite under its eps, or None
    # leaves whose values no op computed (uninitialised memory, an op's random-number generator state:
    # pt2kit_portable.undefined_values), by name: what made them; their shape and dtype are compared, never their values
    undefined: dict[str, str] | None = None


# what the values of a leaf no op computed are, by what made it (pt2kit_portable.undefined_values's name): the
# words of its diff's note and of the one line that lists such leaves
UNINITIALISED, RNG_STATE = "uninitialised memory", "random-number generator state"
NOT_VALUES = "shape and dtype compared, not values"


def undefined_kind(made_by: str) -> str:
    """:data:`RNG_STATE` for an op's output its schema names as generator state (``OP's philox_offset``:
    pt2kit_portable.rng_state_outputs), else :data:`UNINITIALISED` (``aten.empty``, and what read it)."""
    return RNG_STATE if made_by.rpartition("'s ")[2] in RNG_STATE_RETURNS else UNINITIALISED


def undefined_line(leaves: dict[str, str]) -> str:
    """The one line kdiff says of the leaves (name: what made them) whose values no op computed, each kind
    apart: ``out[1], out[2]: uninitialised memory (aten.empty, aten.empty_like left the values undefined); out[4]:
    random-number generator state (OP's philox_offset): shape and dtype compared, not values``."""
    parts = []
    for kind, tail in ((UNINITIALISED, " left the values undefined"), (RNG_STATE, "")):
        names = [n for n, m in leaves.items() if undefined_kind(m) == kind]
        if names:
            parts.append(f"{', '.join(names)}: {kind} ({', '.join(sorted({leaves[n] for n in names}))}{tail})")
    return f"{'; '.join(parts)}: {NOT_VALUES}"


def compare_leaf(name: str, r: Any, t: Any, *, ref: str, test: str, atol: float | None, rtol: float | None,
                 equal_nan: bool, store: Store | None, verdict: Verdict | None = None) -> dict[str, Any] | None:
    """One diff record's fields; None for a leaf that is not compared (an opaque object on both sides)."""
    verdict = verdict or Verdict()
    base: dict[str, Any] = {"output": name, "ref": ref, "test": test, "equal_nan": equal_nan}
    if not isinstance(r, torch.Tensor) or not isinstance(t, torch.Tensor):
        if isinstance(r, torch.Tensor) or isinstance(t, torch.Tensor):
            kinds = tuple("a tensor" if isinstance(x, torch.Tensor) else type(x).__name__ for x in (r, t))
            return {**base, "atol": atol or 0.0, "rtol": rtol or 0.0, "passed": False,
                    "note": f"{kinds[0]} (ref) vs {kinds[1]} (test)"}
        if not (is_plain(r) and is_plain(t)):
            return None  # objects without tensors: metadata, compared by nobody (== may be identity)
        same = r == t or (isinstance(r, float) and isinstance(t, float) and (
            math.isclose(r, t, rel_tol=rtol or 1e-7, abs_tol=atol or 0.0) or (equal_nan and math.isnan(r) and math.isnan(t))))
        return {**base, "atol": atol or 0.0, "rtol": rtol or 0.0, "passed": bool(same), "rule": "close",
                "close": bool(same), "note": None if same else f"ref {r!r} vs test {t!r}"}
    da, dr = default_tolerances(r.dtype, t.dtype)
    a = da if atol is None else atol
    rt = dr if rtol is None else rtol
    base.update(atol=a, rtol=rt, dtype=str(t.dtype).removeprefix("torch."), shape=list(t.shape))
    if r.shape != t.shape:  # a selection (NMS, nonzero after top-k) that chose differently changes shapes too
        return _tie({**base, "passed": False, "rule": "close", "close": False,
                     "note": f"shape {list(r.shape)} (ref) vs {list(t.shape)} (test)"}, verdict)
    made_by = (verdict.undefined or {}).get(name)
    if made_by is not None:  # two runs of the model itself differ there: a difference would be no finding
        return {**base, "passed": True, "rule": "undefined",
                "note": f"its values are {undefined_kind(made_by)} ({made_by}): {NOT_VALUES}"
                + (f"; dtypes {str(r.dtype).removeprefix('torch.')} (ref) vs {base['dtype']} (test)"
                   if r.dtype != t.dtype else "")}
    c = compare(r.detach(), t.detach().to(r.device), atol=a, rtol=rt, equal_nan=equal_nan)
    out = {**base, "metrics": metrics_record(c), "passed": c.passed, "close": c.passed, "rule": "close",
           "worst_index": c.worst_index, "worst_ref": num(c.worst_ref), "worst_test": num(c.worst_test)}
    if r.dtype != t.dtype:
        out["note"] = f"dtypes {str(r.dtype).removeprefix('torch.')} (ref) vs {out['dtype']} (test), compared in the wider"
    floating = t.is_floating_point() or t.is_complex()
    if verdict.rule == "fp64" and floating and verdict.fp64 is not None and verdict.baseline is not None:
        f64, bl = verdict.fp64.get(name), verdict.baseline.get(name)
        if isinstance(f64, torch.Tensor) and isinstance(bl, torch.Tensor):
            out["rule"] = "fp64"
            if not c.passed:
                res = accuracy_rule(t.detach(), bl.detach().to(t.device), f64.detach().to(t.device), equal_nan)
                out["passed"] = res.passed
                out["accuracy"] = Accuracy(passed=res.passed, rmse_test=num(res.rmse_test),
                                           rmse_baseline=num(res.rmse_baseline), multiplier=res.multiplier,
                                           tol=res.tol, baseline=verdict.baseline_name)
    _tie(out, verdict)
    if out["passed"] and (c.nan_ref or c.inf_ref) and out.get("note") is None:
        out["note"] = _made_by_model(c)
    if not out["passed"] and store is not None:
        from .heatmap import heatmap_png

        out["heatmap"] = store.put(heatmap_png(r, t, f"{name}: |{test} - {ref}|"), "image/png", ".png")
    return out


def _made_by_model(c: Any) -> str:
    kinds = " and ".join(f"{n} {k}" for n, k in ((c.nan_ref, "NaN"), (c.inf_ref, "±Inf")) if n)
    return (f"the reference holds {kinds} and the test the same: the model itself makes them, not the compiler "
            "(`aotiprint --jit MODEL.py` names the op)")


def _tie(out: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    """A failing leaf after a near-tie in a selection: named as such, not as a numeric bug."""
    tie = verdict.tie
    if out["passed"] or tie is None:
        return out
    what = out.get("note")
    out.update(passed=True, rule="tie", tie=Tie(op=tie.op, margin=tie.margin, source=tie.source, code=tie.code),
               note=f"differs{f' ({what})' if what else ''} after a near-tie in {tie.op}"
               + (f" at {tie.source}" if tie.source else "")
               + f" (relative margin {tie.margin:.2g}): a data-dependent choice rounding can flip, not a numeric bug")
    return out


def compare_trees(ref_leaves: list[tuple[str, Any]], test_leaves: list[tuple[str, Any]], *, ref: str, test: str,
                  atol: float | None, rtol: float | None, equal_nan: bool, store: Store | None,
                  verdict: Verdict | None = None) -> list[dict[str, Any]]:
    tests = dict(test_leaves)
    out = []
    for name, r in ref_leaves:
        if name not in tests:
            out.append(_tie({"output": name, "ref": ref, "test": test, "atol": atol or 0.0, "rtol": rtol or 0.0,
                             "passed": False, "note": "missing from the test's outputs"}, verdict or Verdict()))
            continue
        d = compare_leaf(name, r, tests.pop(name), ref=ref, test=test, atol=atol, rtol=rtol,
                         equal_nan=equal_nan, store=store, verdict=verdict)
        if d is not None:
            out.append(d)
    for name in tests:
        out.append(_tie({"output": name, "ref": ref, "test": test, "atol": atol or 0.0, "rtol": rtol or 0.0,
                         "passed": False, "note": "only in the test's outputs"}, verdict or Verdict()))
    return out


def frozen_parameters(model: Any) -> int:
    """Parameter tensors with ``requires_grad=False`` (a LoRA model's frozen base): no gradient exists."""
    from pt2kit.runtime.common.modelfile import parameter_counts

    return parameter_counts(model)[2]


def compare_grads(ref_grads: list[tuple[str, Any]], test_grads: list[tuple[str, Any]], *, ref: str, test: str,
                  **kw: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """(diff fields, leaves no gradient reached on either side): a leaf with no gradient on both sides is
    no passing diff, it is not emitted; one with a gradient on one side only is a failure saying which."""
    tests = dict(test_grads)
    neither = [n for n, g in ref_grads if g is None and n in tests and tests[n] is None]
    one_sided = {n: g is None for n, g in ref_grads if n in tests and (g is None) != (tests[n] is None)}
    skip = set(neither) | set(one_sided)
    diffs = compare_trees([(n, g) for n, g in ref_grads if n not in skip],
                          [(n, g) for n, g in test_grads if n not in skip], ref=ref, test=test, **kw)
    for n, ref_none in one_sided.items():
        missing, present = (("ref", ref), ("test", test)) if ref_none else (("test", test), ("ref", ref))
        diffs.append({"output": n, "ref": ref, "test": test, "atol": kw.get("atol") or 0.0,
                      "rtol": kw.get("rtol") or 0.0, "equal_nan": kw.get("equal_nan", False), "passed": False,
                      "rule": "close", "close": False,
                      "note": f"no gradient in the {missing[0]} run ({missing[1]}), "
                              f"a gradient in the {present[0]} run ({present[1]})"})
    return diffs, neither


def stats(t: Any) -> Stats:
    x = t.detach().to(torch.float64)
    finite = x[torch.isfinite(x)]
    return Stats(numel=x.numel(), mean=num(float(finite.mean())) if finite.numel() else None,
                 min=num(float(finite.min())) if finite.numel() else None,
                 max=num(float(finite.max())) if finite.numel() else None,
                 nan=int(torch.isnan(x).sum()), inf=int(torch.isinf(x).sum()))


def divergence_fields(located: Any, output: str) -> dict[str, Any]:
    """A `divergence` record's fields for :func:`.localization.localize`'s answer on a failing output."""
    return dict(output=output, node=located.node, op=located.op, index=located.index, source=located.source,
                code=located.code, module=located.module, metrics=metrics_record(located.comparison),
                ref_stats=stats(located.ref), test_stats=stats(located.test), compiles=located.compiles,
                phase=located.phase, forward_op=located.forward_op, subgraph=located.subgraph)
