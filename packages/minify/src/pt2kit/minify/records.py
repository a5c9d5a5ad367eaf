"""minify's records: the `repro` record of a made repro (its text a blob in the store), and the failure
a stream record names (what minify is asked to keep: a failing gradient's diff, `grad.*`, and a backward
graph's violation are the backward's, minified in train mode)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pt2kit.runtime.common.config import MODULES, from_literal
from pt2kit.schema import Crash, Diff, Kernel, Store, Violation, as_float

from .judge.loading import DECOMPOSITIONS

# each config module's --config prefix (Inductor's settings go bare); a decomposition a model file installed by
# the op it decomposes, as capture's code_settings names a script's
SHORT = {**{module: "" if prefix == "inductor" else f"{prefix}." for prefix, module in MODULES.items()},
         DECOMPOSITIONS: "decomposition:"}


def config_strings(config: dict[str, dict[str, str]]) -> dict[str, str]:
    """{module: {key: literal text}} as the ``--config`` settings a user writes (a string bare)."""
    return {f"{SHORT.get(m, m + '.')}{k}": v if not isinstance(value := from_literal(v), str) else value
            for m, s in config.items() for k, v in s.items()}


def typed_config(config: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    """{module: {key: literal text}} as the values they name: what a worker runs under and a repro's CONFIG
    holds (config_strings's inverse side: the same literal text, typed)."""
    return {m: {k: from_literal(v) for k, v in s.items()} for m, s in config.items()}


def dropped(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> str:
    """The settings of ``before`` that ``after`` (the config the failure needs) no longer sets, in words ('' for
    none): what the config step narrates and the repro's docstring says, so a reader knows what the model ran
    under (max_autotune, triton.cudagraphs) though the repro does not set it."""
    gone = config_strings({m: {k: v for k, v in s.items() if k not in after.get(m, {})} for m, s in before.items()})
    return ", ".join(f"{k}={v}" for k, v in gone.items())


@dataclass
class Outcome:
    """One model's end: its exit code, the line that says it, and the repro (its record's fields, its text)
    when one was made."""

    code: int
    message: str
    fields: dict[str, Any] = field(default_factory=dict)  # the repro record's, when one was made
    text: str | None = None  # repro.py
    query: dict[str, Any] | None = None  # the repro's candidate as a worker's query (what bisection compiles)
    bisect: dict[str, Any] | None = None  # the `bisect` record's fields, when the stage was bisected
    # the model's graphs do not show the failure the stream named (it runs through, or fails otherwise): a
    # failure of the script's the kept graph does not re-create (Dynamo traced the script so, not its graph)
    unshown: bool = False


def repro_fields(fields: dict[str, Any], text: str, store: Store, model: str, output: str | None) -> dict[str, Any]:
    return {**fields, "model": model, "path": store.put_text(text, "text/x-python", ".py"), "output": output}


KEPT_CONSTRAINTS = ("deny", "dtype", "align")


class Want(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The failure minify is asked to keep (what a stream record names, or --deny, or the first finding of
    --profile's checks: the worker sends it to the parent, encoded as this Struct)."""

    kind: str  # accuracy | crash | compile-error | violation | nan | missing-error (eager raises, compiled returns)
    ref: str | None = None  # accuracy: the diff's reference (eager | eager64)
    rule: str | None = None  # accuracy: "close" when the diff's --verdict was close
    said: str | None = None  # accuracy: the diff's verdict, with its numbers (:func:`diff_said`)
    constraint: str | None = None  # violation: deny | dtype | align
    op: str | None = None  # violation: the aten op
    dtype: str | None = None  # violation: the tensor's dtype, where fxcheck named one
    align: int | None = None  # violation (align): the tile size the op's sizes miss
    phase: str | None = None  # "backward": it shows in the backward (a gradient's diff, a backward graph's op)
    backend: str | None = None  # accuracy: the backend the diff compiled with (its ``test``: kdiff's --backend)


def wanted(rec: Any) -> Want | None:
    """The failure a stream record names, or None (a passing diff, a finding-free kernel)."""
    if isinstance(rec, Diff) and not rec.passed and rec.raised:  # no values: eager raised, the compiled side returned
        return Want(kind="missing-error", backend=rec.test or None)
    if isinstance(rec, Diff) and not rec.passed:
        return Want(kind="accuracy", ref="eager64" if rec.ref == "eager64" else "eager",
                    rule="close" if rec.rule == "close" else None, said=diff_said(rec),
                    phase="backward" if rec.output.startswith("grad.") else None, backend=rec.test or None)
    if isinstance(rec, Crash):
        return Want(kind="crash" if rec.signal else "compile-error")
    if _keepable(rec) and unkept(rec) is None:
        align = None
        if rec.constraint == "align":  # the tile size is in fxcheck's message: "... is not a multiple of 16"
            m = re.search(r"not a multiple of (\d+)", rec.message or "")
            if not m:
                return None
            align = int(m.group(1))
        return Want(kind="violation", constraint=rec.constraint, op=rec.op, dtype=rec.dtype, align=align,
                    phase="backward" if rec.phase == "backward" else None)
    if isinstance(rec, Kernel) and rec.finding:
        return Want(kind="nan")
    return None


def checked(captured: Any) -> Want | None:
    """The failure ``pt2kit capture --check nan|accuracy`` found at a later call of a graph, as its model
    record says it (``captured.check``: "nan: out[0]: 11 of 40 values non-finite ...", "accuracy: ...", "...:
    the gradient of input 0 (...): ..." for its backward), or None: the record holds no failed check."""
    check = getattr(captured, "check", None) or ""
    kind, _, what = check.partition(": ")
    if kind not in ("nan", "accuracy"):
        return None
    phase = "backward" if what.startswith("the gradient of input ") else None
    if kind == "nan":
        return Want(kind="nan", phase=phase)
    return Want(kind="accuracy", ref="eager", said=f"pt2kit capture --check {check}", phase=phase)


def diff_said(rec: Diff) -> str:
    """A failing diff's verdict, with its numbers: what minify's own run is held against."""
    m, a = rec.metrics, rec.accuracy
    said = f"the diff of {rec.output} fails " + ("assert_close (--verdict close)" if rec.rule == "close" else
                                                 "PyTorch's float64 rule" if a is not None else "assert_close")
    if m is not None:
        said += f", {100 * m.mismatch_share:.3g}% of elements, max abs {as_float(m.max_abs):.3g}"
    if a is not None:
        said += f" (compiled RMSE {as_float(a.rmse_test):.3g} vs eager {as_float(a.rmse_baseline):.3g} from float64)"
    return said


def _keepable(rec: Any) -> bool:
    # minify cuts aten graphs (a backward one's finding in train mode): a Dynamo-level finding is not one
    # it can keep, nor a constraint whose rule its harness does not check (it would keep the op, not the fault)
    return isinstance(rec, Violation) and (rec.op or "").startswith("aten.") and rec.constraint in KEPT_CONSTRAINTS


def in_place(op: str) -> bool:
    """``aten.relu_.default`` writes its input (``aten.__and__`` does not): fxcheck sees it before
    functionalization, and the functional graph minify cuts holds ``aten.relu`` instead."""
    packet = op.split(".")[1] if "." in op else op
    return packet.endswith("_") and not packet.endswith("__")


def unkept(rec: Any) -> str | None:
    """Why a violation minify could otherwise keep is left alone, or None (what :func:`wanted` skips)."""
    if _keepable(rec) and in_place(rec.op):
        return (f"{rec.op} is an in-place op: fxcheck saw it before functionalization, and minify cuts the "
                "functional forward graph the backend gets, where it is not: not minified")
    return None
