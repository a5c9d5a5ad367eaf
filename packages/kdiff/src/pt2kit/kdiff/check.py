"""kdiff in a user's own test suite: ``assert_same(actual, expected)`` on any two pytrees.

Guarantees: the leaves are paired by pytree key path (cache objects and other containers pytree
does not know are walked as kdiff walks model outputs); each tensor pair is judged with
``torch.testing.assert_close`` semantics (a nested jagged tensor by its ``values()``, and its
``offsets()`` exactly) (its default tolerances per dtype unless ``atol``/``rtol``
are given); nothing is written anywhere. When anything differs it raises ``AssertionError`` whose
message is kdiff's per-leaf table: path, verdict, max abs and rel error, mismatches, the worst
element's index and both values, and the tolerances used.
"""

from __future__ import annotations

from typing import Any

from pt2kit.runtime.common.tensors import unjag
from pt2kit.runtime.worker.outputs import flatten
from pt2kit.schema import as_float

from .records import compare_trees


def _fmt(x: Any) -> str:
    v = as_float(x)
    return "-" if v is None else f"{v:.6g}"


def table(diffs: list[dict[str, Any]]) -> str:
    head = f"{'leaf':<36} {'verdict':<7} {'max abs':>10} {'max rel':>10} {'mismatched':>12}  worst at: expected / actual" \
           "  (atol, rtol)"
    rows = [head]
    for d in diffs:
        m = d.get("metrics")
        mism = f"{m.mismatches}/{m.numel}" if m else "-"
        worst = f"{d['worst_index']}: {_fmt(d.get('worst_ref'))} / {_fmt(d.get('worst_test'))}" \
            if d.get("worst_index") is not None else (d.get("note") or "")
        rows.append(f"{d['output']:<36} {'ok' if d['passed'] else 'FAIL':<7} {_fmt(m.max_abs) if m else '-':>10} "
                    f"{_fmt(m.max_rel) if m else '-':>10} {mism:>12}  {worst}  ({d['atol']:g}, {d['rtol']:g})")
    return "\n".join(rows)


def assert_same(actual: Any, expected: Any, *, atol: float | None = None, rtol: float | None = None,
                equal_nan: bool = False, name: str = "out") -> None:
    """Raise ``AssertionError`` with kdiff's per-leaf table when ``actual`` differs from ``expected``."""
    diffs = compare_trees(unjag(flatten(expected, name)), unjag(flatten(actual, name)), ref="expected", test="actual",
                          atol=atol, rtol=rtol, equal_nan=equal_nan, store=None)
    failing = [d for d in diffs if not d["passed"]]
    if failing:
        raise AssertionError(f"{len(failing)} of {len(diffs)} leaves differ\n{table(diffs)}")
