"""A float64 run of a model, and PyTorch's accuracy rule against it (the rule kdiff, minify and benchrun share).

Guarantees:

* :func:`float64_copy` and :func:`float64_mode` (``pt2kit_portable``'s, re-exported here) make the float64
  run: a float64 copy of a model and its inputs, kept in float64 through the model's explicit float32
  casts while a cast to float16 or bfloat16 still rounds, higher-order ops (``torch.cond``) seen inside,
  an op with no float64 kernel run in float32 and named in ``mode.narrowed``. kdiff, benchrun, minify's
  candidates and every repro.py run this one reference (pt2kit_portable's header says more).
* :func:`accuracy_rule` is ``torch._dynamo.utils.same``'s test for a floating tensor, in the order
  it checks: a leaf that fails ``assert_close`` against the baseline still passes when
  ``rmse(test, fp64) <= multiplier * rmse(baseline, fp64) + tol / 10``; the multiplier is same()'s
  (2, or 3 for float16/bfloat16 and for tensors under 1000 elements, as the benchmark harness asks for
  small ones). Rounding noise on any device passes; a real bug is far outside.
* :func:`differs` is the one verdict on an output leaf: assert_close first, then the float64 rule
  (assert_close alone under kdiff's ``--verdict close``); NaN where both sides hold NaN, and the same ±Inf, agree (the benchmark harness's ``equal_nan``).
  kdiff's verdict, minify's reproduction check (its repro.py carries these functions verbatim) and
  :func:`judge_leaves` (benchrun's accuracy status: which leaf fails and by how much) all use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# the float64 run itself is pt2kit_portable's, the one minify's candidates and repros run too
from pt2kit_portable import float64_copy, float64_mode, to_float64

__all__ = ["RuleResult", "accuracy_rule", "agreeing_nonfinite", "default_tolerances", "differs", "float64_copy",
           "float64_mode", "judge_leaves", "multiplier_for", "rmse", "to_float64", "tol_for"]


@dataclass
class RuleResult:
    passed: bool
    rmse_test: float
    rmse_baseline: float
    multiplier: float
    tol: float


def multiplier_for(dtype: Any, numel: int) -> float:
    import torch

    if dtype in (torch.float16, torch.bfloat16) or numel < 1000:
        return 3.0
    return 2.0


def tol_for(dtype: Any) -> float:
    """The benchmark harness's tolerance: 1e-4 for float32 and float64, 1e-3 for float16, 1e-2 for bfloat16."""
    import torch

    return {torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-4)


def rmse(a: Any, b: Any) -> float:
    """Root mean squared error in float64, in chunks (bounded extra memory)."""
    import torch

    a, b = a.reshape(-1), b.reshape(-1)
    n = a.numel()
    if n == 0:
        return 0.0
    total = 0.0
    step = 1 << 22
    for i in range(0, n, step):
        d = a[i:i + step].to(torch.float64) - b[i:i + step].to(a.device, torch.float64)
        total += float((d * d).sum())
    return math.sqrt(total / n)


def agreeing_nonfinite(a: Any, b: Any) -> Any:
    """Where both sides hold NaN, or the same infinity: the model made those values, and both agree."""
    return (a.isnan() & b.isnan()) | (a.isinf() & (a == b))


def accuracy_rule(test: Any, baseline: Any, fp64: Any, equal_nan: bool = True) -> RuleResult:
    """same()'s float64 test for a leaf that already failed assert_close against the baseline.

    NaN where test and baseline both hold NaN (and the same infinity) agrees, as same() with the
    harness's ``equal_nan``; those elements are left out of both RMSEs, so the rest is still judged
    (same() passes any leaf whose two RMSEs are both NaN, whatever its finite part holds); without
    ``equal_nan`` every NaN counts."""
    if fp64.shape != test.shape or baseline.shape != test.shape:
        return RuleResult(False, math.nan, math.nan, 0.0, 0.0)
    m = multiplier_for(test.dtype, test.numel())
    tol = tol_for(test.dtype)
    fp64 = fp64.to(test.device)
    keep = ~agreeing_nonfinite(test, baseline.to(test.device))
    if equal_nan and not bool(keep.all()):
        test, baseline, fp64 = test[keep], baseline.to(test.device)[keep], fp64[keep]
    e_test = rmse(fp64, test)
    e_base = rmse(fp64, baseline)
    # NaN compares false, as in same(): a NaN on the tested side alone is never rounding noise
    return RuleResult(e_test <= m * e_base + tol / 10.0, e_test, e_base, m, tol)


def differs(test: Any, eager: Any, fp64: Any = None, ref: str = "eager", rule: str = "fp64") -> str:
    """THE verdict on one output leaf (kdiff's, minify's reproduction check, benchrun's): "" when it
    passes, else why.

    It fails when it fails assert_close (default tolerances; NaN where the reference holds NaN too,
    and the same ±Inf, agree) against the reference (eager, or with ``ref="eager64"`` the float64 run
    at eager's dtype) and :func:`accuracy_rule` against ``fp64`` (when there is one); with
    ``rule="close"`` (a diff kdiff judged with ``--verdict close``) assert_close alone. Written with
    torch and the standard library only: minify's repro.py carries it verbatim."""
    import torch

    if not isinstance(test, torch.Tensor) or not isinstance(eager, torch.Tensor):
        same = test == eager or (isinstance(test, float) and isinstance(eager, float) and test != test and eager != eager)
        return "" if same else f"{test!r} != {eager!r}"
    if test.shape != eager.shape:
        return f"shape {list(test.shape)} != {list(eager.shape)}"
    test = test.detach().to(eager.device)
    if not (eager.is_floating_point() or eager.is_complex()):
        bad = int((test != eager).sum())
        return f"{bad} of {eager.numel()} elements differ" if bad else ""
    atol, rtol = default_tolerances(eager.dtype)
    if (atol, rtol) == (0.0, 0.0):
        atol, rtol = 1e-5, 1.3e-6
    against = eager
    if ref == "eager64" and isinstance(fp64, torch.Tensor) and fp64.shape == test.shape:
        against = fp64.to(test.device, eager.dtype)
    close = torch.isclose(test, against, rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return ""
    if rule == "close":
        why = "assert_close fails"
    elif isinstance(fp64, torch.Tensor) and fp64.shape == test.shape and not eager.is_complex():
        r = accuracy_rule(test, eager.detach(), fp64.detach())
        if r.passed:
            return ""
        why = f"RMSE vs float64 {r.rmse_test:.3g} > {r.multiplier:g} x eager's {r.rmse_baseline:.3g}"
    else:
        why = "assert_close fails and there is no float64 run to judge by"
    i = int((~close).reshape(-1).nonzero()[0])
    return f"{int((~close).sum())} of {eager.numel()} elements differ ({why}; e.g. " \
           f"{complex(test.reshape(-1)[i]) if test.is_complex() else float(test.reshape(-1)[i]):.6g} vs " \
           f"{complex(against.reshape(-1)[i]) if test.is_complex() else float(against.reshape(-1)[i]):.6g})"


# torch.testing.assert_close's defaults, by dtype name: (rtol, atol)
_CLOSE = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
          "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def default_tolerances(*dtypes: Any) -> tuple[float, float]:
    """(atol, rtol): the loosest of assert_close's defaults for the dtypes (0, 0 for integers)."""
    pairs = [_CLOSE.get(str(d).removeprefix("torch."), (0.0, 0.0)) for d in dtypes]
    return max(p[1] for p in pairs), max(p[0] for p in pairs)


def judge_leaves(test: list[tuple[str, Any]], baseline: list[tuple[str, Any]],
                 fp64: list[tuple[str, Any]] | None) -> str:
    """The verdict on a model's flattened outputs ((name, leaf) lists, as :func:`~.outputs.flatten`
    makes them): "" when every leaf passes, else why the first failing one fails.

    A floating leaf passes when it passes ``assert_close`` (default tolerances) against the
    baseline, or :func:`accuracy_rule` against the float64 run; any other leaf must be equal."""
    from .tensors import unjag

    test, baseline, fp64 = unjag(test), unjag(baseline), unjag(fp64 or [])  # a jagged leaf: values, offsets
    tests, f64 = dict(test), dict(fp64)
    for name, base in baseline:
        if name not in tests:
            return f"{name}: missing from the compiled outputs"
        t = tests.pop(name)
        why = f"{t!r} != {base!r}" if type(base) is not type(t) else differs(t, base, f64.get(name))
        if why:
            return f"{name}: {why}"
    if tests:
        return f"{next(iter(tests))}: only in the compiled outputs"
    return ""
