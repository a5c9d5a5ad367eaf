"""Leaf-by-leaf comparison of two flattened output trees (and of gradients)."""

from __future__ import annotations

import math
from typing import Any

import torch

from pt2kit.schema import Metrics, Store, num

from .metrics import compare, default_tolerances


def metrics_record(c: Any) -> Metrics:
    return Metrics(numel=c.numel, max_abs=num(c.max_abs), mean_abs=num(c.mean_abs), max_rel=num(c.max_rel),
                   rmse=num(c.rmse), mismatches=c.mismatches, mismatch_share=c.mismatch_share, nan_ref=c.nan_ref,
                   nan_test=c.nan_test, inf_ref=c.inf_ref, inf_test=c.inf_test)


def compare_leaf(name: str, r: Any, t: Any, *, ref: str, test: str, atol: float | None, rtol: float | None,
                 equal_nan: bool, store: Store | None) -> dict[str, Any]:
    base: dict[str, Any] = {"output": name, "ref": ref, "test": test, "equal_nan": equal_nan}
    if not isinstance(r, torch.Tensor) or not isinstance(t, torch.Tensor):
        same = r == t or (isinstance(r, float) and isinstance(t, float) and (
            math.isclose(r, t, rel_tol=rtol or 1e-7, abs_tol=atol or 0.0) or (equal_nan and math.isnan(r) and math.isnan(t))))
        return {**base, "atol": atol or 0.0, "rtol": rtol or 0.0, "passed": bool(same),
                "note": None if same else f"ref {r!r} vs test {t!r}"}
    da, dr = default_tolerances(r.dtype, t.dtype)
    a = da if atol is None else atol
    rt = dr if rtol is None else rtol
    base.update(atol=a, rtol=rt, dtype=str(t.dtype).removeprefix("torch."), shape=list(t.shape))
    if r.shape != t.shape:
        return {**base, "passed": False, "note": f"shape {list(r.shape)} (ref) vs {list(t.shape)} (test)"}
    c = compare(r.detach(), t.detach().to(r.device), atol=a, rtol=rt, equal_nan=equal_nan)
    out = {**base, "metrics": metrics_record(c), "passed": c.passed, "worst_index": c.worst_index,
           "worst_ref": num(c.worst_ref), "worst_test": num(c.worst_test)}
    if r.dtype != t.dtype:
        out["note"] = f"dtypes {str(r.dtype).removeprefix('torch.')} (ref) vs {out['dtype']} (test), compared in the wider"
    if not c.passed and store is not None:
        from .heatmap import heatmap_png

        out["heatmap"] = store.put(heatmap_png(r, t, f"{name}: |{test} - {ref}|"), "image/png", ".png")
    return out


def compare_trees(ref_leaves: list[tuple[str, Any]], test_leaves: list[tuple[str, Any]], *, ref: str, test: str,
                  atol: float | None, rtol: float | None, equal_nan: bool, store: Store | None) -> list[dict[str, Any]]:
    tests = dict(test_leaves)
    out = []
    for name, r in ref_leaves:
        if name not in tests:
            out.append({"output": name, "ref": ref, "test": test, "atol": atol or 0.0, "rtol": rtol or 0.0,
                        "passed": False, "note": "missing from the test's outputs"})
            continue
        out.append(compare_leaf(name, r, tests.pop(name), ref=ref, test=test, atol=atol, rtol=rtol,
                                equal_nan=equal_nan, store=store))
    for name in tests:
        out.append({"output": name, "ref": ref, "test": test, "atol": atol or 0.0, "rtol": rtol or 0.0,
                    "passed": False, "note": "only in the test's outputs"})
    return out


def grads_of(loaded: Any, backend: Any, seed: int) -> list[tuple[str, Any]]:
    """Parameter and input gradients of sum(outputs), named grad.<param> and grad.inputs[i]."""
    from torch.utils._pytree import tree_map

    from pt2kit.runtime.outputs import flatten

    from .backends import prepare

    fn, inputs = prepare(loaded.model, loaded.inputs, backend)
    inputs = tree_map(lambda x: x.detach().clone().requires_grad_(True)
                      if isinstance(x, torch.Tensor) and x.is_floating_point() else x, inputs)
    module = getattr(fn, "_orig_mod", fn)
    params = list(module.named_parameters()) if isinstance(module, torch.nn.Module) else []
    for _, p in params:
        p.grad = None
    torch.manual_seed(seed)
    out = loaded.call(fn, inputs)
    leaves = [t for _, t in flatten(out) if isinstance(t, torch.Tensor) and t.requires_grad]
    if leaves:
        torch.autograd.backward(leaves, [torch.ones_like(t) for t in leaves])
    grads = [(f"grad.{n}", p.grad.detach().clone() if p.grad is not None else None) for n, p in params]
    grads += [(f"grad.{n}", x.grad.detach().clone() if x.grad is not None else None)
              for n, x in flatten(inputs, "inputs") if isinstance(x, torch.Tensor) and x.requires_grad]
    for _, p in params:
        p.grad = None
    torch._dynamo.reset()
    return grads
