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
  kdiff's verdict, minify's reproduction check (its repro.py carries pt2kit_portable verbatim),
  :func:`judge_leaves` (benchrun's accuracy status: which leaf fails and by how much) and pt2kit capture's
  ``--check accuracy`` all use it: every function above but :func:`judge_leaves` is pt2kit_portable's,
  re-exported here.
"""

from __future__ import annotations

from typing import Any

# the float64 run and the verdict are pt2kit_portable's, the ones minify's candidates and repros and
# pt2kit capture's in-process check (--check accuracy) run too (_CLOSE: minify <= 0.6 embeds it from here)
from pt2kit_portable import (
    _CLOSE,  # noqa: F401
    RuleResult,
    accuracy_rule,
    agreeing_nonfinite,
    default_tolerances,
    differs,
    float64_copy,
    float64_mode,
    multiplier_for,
    rmse,
    to_float64,
    tol_for,
)

__all__ = ["RuleResult", "accuracy_rule", "agreeing_nonfinite", "default_tolerances", "differs", "float64_copy",
           "float64_mode", "float64_reference_refused", "judge_leaves", "multiplier_for", "rmse", "to_float64",
           "tol_for"]


def float64_reference_refused(label: str, ref: str, autocast: list[Any]) -> str | None:
    """The one line why ``--ref eager64`` cannot judge a model called under ``autocast`` (its model file's
    autocast_state), None where it can. autocast leaves float64 tensors alone, so a float64 copy runs in
    float64 through the very ops autocast runs in bfloat16 or float16 on the compiled side: every leaf would
    differ by that rounding. Said, never swapped for another reference (the user chose both)."""
    from pt2kit_portable import autocast_words

    if ref != "eager64" or not autocast:
        return None
    return (f"{label}: --ref eager64 cannot judge a model called under {autocast_words(autocast)} (as the script "
            "called it): autocast leaves a float64 copy in float64, so it holds no reference for the ops autocast "
            "runs in lower precision; give --ref eager (the default: eager under the same autocast, judged by "
            "PyTorch's rule against a float64 run)")


def judge_leaves(test: list[tuple[str, Any]], baseline: list[tuple[str, Any]],
                 fp64: list[tuple[str, Any]] | None) -> str:
    """The verdict on a model's flattened outputs ((name, leaf) lists, as :func:`~.outputs.flatten`
    makes them): "" when every leaf passes, else why the first failing one fails.

    A floating leaf passes when it passes ``assert_close`` (default tolerances) against the
    baseline, or :func:`accuracy_rule` against the float64 run; any other leaf must be equal."""
    from ..common.tensors import unjag

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
