"""kdiff under ``--precision as-configured``: the precision modes each side ran with, and what a failing
output says when judged again under PyTorch's accuracy-harness settings.

Guarantees:

* Every diff record carries ``precision``: the reduced-precision modes (TF32 matmul, TF32 cuDNN,
  BF16 CPU matmul) the reference and the test ran with, read after each run, and every setting that
  was not the harness's (on a CPU run only those that act on the CPU: oneDNN precision and
  determinism, Inductor's fallback_random).
* When an output fails and its settings were not the harness's, the reference, eager baseline and
  test run again under :data:`~pt2kit.runtime.common.precision.HARNESS` (the float64 run is kept: no
  precision mode touches float64), judged by the same rule. An output that passes then is
  ``rule: "precision"``, ``passed``: it fails only with the model's own settings, which PyTorch's
  accuracy harness does not count as a bug; its note names the modes, the other settings that were
  not the harness's, and, when localisation finds one with them on, the first diverging op
  ("TF32 cuDNN (with fallback_random=False) in aten.convolution.default"). Which of the settings
  made the difference is not searched for. An output
  that still fails stays a failure, and the run is left under the harness's settings, so the
  localisation that follows names the op that fails without the modes (a planted bug, not a TF32
  matmul before it).
* Gradients are reported with their modes, never judged again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pt2kit.schema import Precision

# the settings that act on a CPU run (the rest are cuBLAS's and cuDNN's)
_CPU = ("cpu_matmul", "mkldnn_deterministic", "fallback_random")


def _settings(state: dict[str, Any], device: str) -> list[str]:
    from pt2kit.runtime.common.precision import differences

    cpu = not str(device).startswith("cuda")
    return [s for s in differences(state) if not cpu or s.split("=", 1)[0] in _CPU]


def as_configured(diffs: list[dict[str, Any]], states: dict[str, dict[str, Any]], device: str, runs: Any,
                  tol: dict[str, Any], chan: Any, *, locate: Callable[[], Any] | None) -> None:
    """Attach the modes to ``diffs`` and judge failing outputs again (see the module docstring); the
    diffs are changed in place."""
    from pt2kit.runtime.common.precision import HARNESS, reduced_modes, use_precision
    from pt2kit.runtime.shims.torchapi import reset_dynamo

    from .records import compare_trees

    ref_state, test_state = states.get("reference", {}), states.get("test", {})
    modes = {"ref": reduced_modes(ref_state, device), "test": reduced_modes(test_state, device)}
    settings = sorted(set(_settings(ref_state, device)) | set(_settings(test_state, device)))
    chan.note("precision", f"as configured: reference {', '.join(modes['ref']) or 'IEEE float32'}; "
              f"test {', '.join(modes['test']) or 'IEEE float32'}")
    for d in diffs:
        d["precision"] = Precision(ref=modes["ref"], test=modes["test"], settings=settings)
    failing = [d for d in diffs if not d["passed"] and not d["output"].startswith("grad.")]
    if not failing or not settings:
        return
    use_precision(HARNESS)
    reset_dynamo()
    ref_leaves, test_leaves, verdict = runs.again("(harness precision)")
    again = {d["output"]: d for d in compare_trees(ref_leaves, test_leaves, ref=runs.ref.name, test=runs.test.name,
                                                  store=None, verdict=verdict, **tol)}
    explained = []
    for d in failing:
        passed = bool(again.get(d["output"], {}).get("passed"))
        d["precision"].harness_passed = passed
        if passed:
            explained.append(d)
    if not explained:
        return
    op = source = None
    if locate is not None:  # where the difference starts with the modes on
        use_precision(test_state)
        reset_dynamo()
        located = locate()
        op, source = (located.op or located.node, located.source) if located is not None else (None, None)
        use_precision(HARNESS)  # what is still failing is localised without the modes
        reset_dynamo()
    named = sorted(set(modes["ref"]) | set(modes["test"]))
    others = [x for x in settings if x.split("=", 1)[0] not in ("matmul", "cudnn", "cpu_matmul")]
    what = ", ".join(named) + (f" (with {', '.join(others)})" if others else "") if named else ", ".join(others)
    where = f" in {op}" + (f" at {source}" if source else "") if op else ""
    for d in explained:
        d["precision"].op, d["precision"].source = op, source
        d.update(passed=True, rule="precision",
                 note=f"{what}{where}: passes under PyTorch's accuracy-harness settings (TF32 off, deterministic "
                      "cuDNN, fallback_random), so the difference is the model's precision mode, not a compiler bug")
