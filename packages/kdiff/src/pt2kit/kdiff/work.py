"""The child-process side of `kdiff`: run reference and test, compare every leaf, localise.

Runs, in this order, only those the verdict needs: the reference; an eager float32 baseline (the
reference itself unless it is eager64); a float64 run for PyTorch's accuracy rule (the reference
itself for eager64); the test. The first eager run also notes near-ties in data-dependent
selections (:mod:`.ties`). The sides are run by :mod:`.sides`; this module loads the model and
turns their leaves into diffs, gradients and a divergence.
"""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec

from pt2kit.runtime.common.backends import is_code
from pt2kit.runtime.common.config import apply_config
from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.modelfile import backend_callable, load_model, model_fields
from pt2kit.runtime.common.outcome import CANNOT, CannotJudge
from pt2kit.runtime.common.precision import HARNESS, precision_state, reduced_modes, use_precision
from pt2kit.runtime.common.text import exception_line as _why
from pt2kit.runtime.shims.torchapi import fx_key_globals
from pt2kit.runtime.worker.accuracy import float64_reference_refused
from pt2kit.runtime.worker.training import check_trainable
from pt2kit.schema import Diff, Divergence, Model
from pt2kit_portable import autocast_words

from .job import Job
from .modes import as_configured
from .raised import EagerRaised, judge_raised
from .sides import Runs, Sides, seeded


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`run` returns for the parent's summary line (encoded across the process boundary; the
    narrator decodes it back)."""

    diffs: int  # leaves compared
    failed: int = 0
    note: str | None = None
    frozen: int = 0  # with --grad: frozen parameters, no gradient
    no_grad: list[str] = []  # with --grad: leaves no gradient reached on either side
    by_fp64: int = 0  # passed by the float64 rule, not by assert_close
    ties: int = 0
    precision: int = 0
    divergence: dict[str, Any] | None = None
    nothing_compiled: str | None = None  # Dynamo compiled no graph for the test side: its reason
    written: int = 0  # leaves that are tensors a side wrote in place (:mod:`.written`)




def run(payload: dict[str, Any], chan: Any) -> Summary:
    """One model diffed (see the module docstring): its records sent through ``chan``, its summary returned."""
    job = msgspec.convert(payload, Job)
    chan.stage("load")
    keyed = fx_key_globals()  # as the script's process had them: what of them the harness changes is said
    if job.precision == "harness":  # before the model: CUBLAS_WORKSPACE_CONFIG must precede any cuBLAS work
        use_precision(HARNESS)
    with apply_config(job.config) as stack:
        try:
            loaded = _load(job, chan, stack)
        except Exception:  # capture found it does not run here: its line, not the load's error
            if job.unrunnable:
                raise CannotJudge(job.unrunnable) from None
            raise
        # what every side runs under that the script's compile did not, in the FX graph cache's key
        changed = {k: str(v) for k, v in fx_key_globals().items() if keyed.get(k) != v}
        return _diff(job, loaded, chan, {**_step_settings(job), **changed})


def _load(job: Job, chan: Any, stack: contextlib.ExitStack) -> Any:
    """The model, loaded under the job's config (its `model` record sent when the command line named it),
    with the settings every side then runs under: the harness's precision, and for a training step
    Inductor's fallback_random on ``stack`` (a dropout drawn alike on every side)."""
    harness, train = job.precision == "harness", job.mode == "train"
    loaded = load_model(job.model, device=job.device, from_stream=job.from_stream, label=job.label)
    refused = float64_reference_refused(loaded.label, job.ref, loaded.autocast)
    if refused:
        raise UsageError(refused)
    if loaded.autocast:  # every side's call enters it (LoadedModel.call), as the script's `with` did
        chan.note("autocast", f"every side under {autocast_words(loaded.autocast)}, as the model file says")
    if train:  # a function has no mode and trains only its inputs that require grad
        check_trainable(loaded.model, loaded.inputs, loaded.label)
        if hasattr(loaded.model, "train"):
            loaded.model.train()
    if harness:
        own = reduced_modes(precision_state(), job.device)
        if own:
            chan.note("precision_own", ", ".join(own))
        use_precision(HARNESS, inductor=False)  # the model file's own TF32 does not stand; --config's does
    _backend_settings(job, chan, stack)
    if job.emit_model:  # its settings are the file's, the environment's, --config's: not the harness's
        with apply_config({"inductor.fallback_random": "false"} if harness else {}):
            chan.emit_new(Model, **model_fields(loaded, job.device, job.config), train=train)
    stack.enter_context(apply_config(_step_settings(job)))
    return loaded


def _step_settings(job: Job) -> dict[str, str]:
    """The Inductor settings every side of a training step runs under that the script's compile did not
    have: fallback_random on (a dropout drawn alike on every side), unless --config set it."""
    if job.mode == "train" and "inductor.fallback_random" not in job.config:
        return {"inductor.fallback_random": "true"}
    return {}


def _backend_settings(job: Job, chan: Any, stack: contextlib.ExitStack) -> None:
    """The settings a backend file (``--backend FILE.py:NAME``) sets at its top level, on ``stack``: they
    are the user's, as importing the file sets them in the script (a --config of the same key wins)."""
    if not is_code(job.test):
        return
    own: dict[str, str] = {}
    backend_callable(job.test, "--backend", settings=own)
    own = {k: v for k, v in own.items() if k not in job.config}
    if own:
        stack.enter_context(apply_config(own))
        chan.note("backend_settings", f"{job.test.rpartition(':')[0]} sets "
                  + ", ".join(f"{k}={v}" for k, v in sorted(own.items()))
                  + " at its top level: every side runs under it, as importing it does")


def _diff(job: Job, loaded: Any, chan: Any, keyed: dict[str, str]) -> Summary:
    """Every side run, every leaf compared (outputs, then gradients), the diffs written, the first
    divergence localised; ``keyed``: the settings in the FX graph cache's key the script's compile did not have."""
    from . import backends
    from .records import compare_trees
    from .ties import TieRecorder

    ref, test = backends.resolve(job.ref, role="ref"), backends.resolve(job.test, role="test")
    tol = {"atol": job.atol, "rtol": job.rtol, "equal_nan": job.equal_nan}
    ties = TieRecorder()
    sides = Sides(loaded, job.seed, job.mode == "train", ties, chan, keyed)
    sides.cannot = CannotJudge(job.unrunnable) if job.unrunnable else None
    try:
        runs = Runs(sides, ref, test, job.verdict or "fp64", loaded.label, chan)
    except EagerRaised as e:  # a finding only where the compiled side returns (:mod:`.raised`)
        chan.emit_new(Diff, model=loaded.label, **judge_raised(e, lambda: sides.run(test, "test"), ref.name,
                                                               test.name, sides.cannot))
        return Summary(diffs=1, failed=1)
    if ties.blind:
        chan.note("hops", "the near-tie watch ran " + ", ".join(ties.blind)
                  + " whole: selections inside it are not checked for ties")
    verdict = runs.verdict(ties.nearest() if (job.verdict or "fp64") == "fp64" else None)
    diffs = compare_trees(runs.ref_leaves, runs.test_leaves, ref=ref.name, test=test.name, store=chan.store,
                          verdict=verdict, **tol)
    graded, grad_counts, no_grads = _gradients(job, loaded, runs, sides, verdict, tol, chan)
    diffs += graded
    if not diffs and no_grads is None:  # "0 of 0 leaves pass" said pass about nothing compared
        raise CannotJudge(f"{loaded.label}: {CANNOT}: it returns no tensor, writes none of its inputs, parameters "
                          "or buffers in place, and has no gradient to compare")
    locate = _Locator(job, loaded, ref, test, runs.rule, chan, sides.start)
    if job.precision != "harness":
        as_configured(diffs, sides.states, job.device, runs, tol, chan, locate=locate if job.localize else None)
    failed = [d for d in diffs if not d["passed"]]
    for d in diffs:
        if sides.nothing:  # the stream says it too: these leaves compared eager code with eager code
            d["note"] = sides.nothing + (f"; {d['note']}" if d.get("note") else "")
        chan.emit_new(Diff, model=loaded.label, **d)
    if no_grads is not None:
        raise UsageError(f"{loaded.label}: outputs: {len(diffs) - len(failed)} of {len(diffs)} leaves pass; gradients: "
                         "the model's own eager backward fails, so there are none to compare (the model, not the "
                         f"compiler): {_why(no_grads)}") from None
    located = _divergence(locate, failed, loaded.label, chan) if job.localize else None
    return Summary(diffs=len(diffs), failed=len(failed), note=runs.note, **grad_counts,
                   by_fp64=sum(1 for d in diffs if d.get("rule") == "fp64" and d["passed"] and not d.get("close", True)),
                   ties=sum(1 for d in diffs if d.get("rule") == "tie"),
                   precision=sum(1 for d in diffs if d.get("rule") == "precision"),
                   divergence=None if located is None else {"op": located.op, "source": located.source},
                   nothing_compiled=sides.nothing, written=len(sides.start.names))




def _gradients(job: Job, loaded: Any, runs: Runs, sides: Sides, verdict: Any,
               tol: dict[str, Any], chan: Any) -> tuple[list[dict[str, Any]], dict[str, Any], BaseException | None]:
    """(the gradients' diffs, the summary's counts of them, the model's own eager backward's failure: said
    after the forward's diffs are written) with ``--grad`` or ``--mode train``; nothing otherwise."""
    from . import backends
    from .grads import grads_of as _grads_of
    from .records import Verdict, compare_grads, frozen_parameters

    ref, test, rule, seed, trained = runs.ref, runs.test, runs.rule, job.seed, sides.trained
    if job.mode == "train":  # each side's run was a training step: its gradients are in hand
        g = {"ref": trained["reference"], "test": trained["test"]}
        if rule == "fp64":
            g["fp64"], g["base"] = (trained["reference"], trained["baseline"]) if ref.float64 else \
                (trained["float64 reference"], trained["reference"])
    elif job.grad:
        chan.stage("gradients")

        def grads_of(_: Any, backend: Any, seed: int) -> list[tuple[str, Any]]:  # each from the same start
            sides.start.restore()
            return _grads_of(loaded, backend, seed)

        try:
            g = {"ref": grads_of(loaded, ref, seed)}
        except Exception as e:
            if ref.compile is not None or ref.float64:
                raise
            return [], {}, e
        g["test"] = grads_of(loaded, test, seed)
        if rule == "fp64":
            try:
                g["fp64"] = g["ref"] if ref.float64 else grads_of(loaded, runs.f64, seed)
            except Exception as e:  # the README's promise: no float64 gradients, assert_close judges them
                rule = "close"
                chan.note("fp64", f"the float64 backward fails ({_why(e)}): gradient verdicts are assert_close's")
            g["base"] = grads_of(loaded, backends.Backend("eager"), seed) if ref.float64 else g["ref"]
    else:
        return [], {}, None
    gv = Verdict(rule=rule, fp64=dict(g.get("fp64", [])), baseline=dict(g.get("base", [])),
                 baseline_name=verdict.baseline_name)
    graded, no_grad = compare_grads(g["ref"], g["test"], ref=ref.name, test=test.name, store=chan.store,
                                    verdict=gv, **tol)
    return graded, {"frozen": frozen_parameters(loaded.model), "no_grad": no_grad}, None


class _Locator:
    """``locate()``: the first node whose compiled value leaves tolerance, in the forward graphs, or with
    ``backward=True`` in the backward graphs of the very step whose gradients were compared; None (the
    reason noted) where localisation cannot say."""

    def __init__(self, job: Job, loaded: Any, ref: Any, test: Any, rule: str, chan: Any, start: Any) -> None:
        self.loaded, self.chan, self.seed, self.train = loaded, chan, job.seed, job.mode == "train"
        self.start = start
        self.said = False  # a note said why localisation could not tell
        self.kw = {"ref": ref, "test": test, "atol": job.atol, "rtol": job.rtol, "equal_nan": job.equal_nan,
                   "fp64_rule": rule == "fp64", "on_step": chan.stage, "seed": job.seed if self.train else None}

    def __call__(self, backward: bool = False) -> Any:
        from .grads import step
        from .localization import LocalizeError, localize, localize_backward

        loaded, seed = self.loaded, self.seed

        def run(fn: Any) -> Any:  # each call from the values every side started from
            self.start.restore()
            return seeded(seed, lambda: step(loaded, fn, train=self.train) if backward else loaded.call(fn))

        try:
            return (localize_backward if backward else localize)(loaded.model, run, **self.kw)
        except LocalizeError as e:
            self.chan.note("localize", str(e))
            self.said = True
            return None


def _divergence(locate: _Locator, failed: list[dict[str, Any]], label: str, chan: Any) -> Any:
    """The first divergence of a failing output, else of a failing gradient (in the backward graphs),
    written as a `divergence` record; None when nothing failed or it was not found."""
    from .records import divergence_fields

    failed_outputs = [d for d in failed if not d["output"].startswith("grad.")]
    if failed_outputs:
        chan.stage("localize")
        located = locate()
        if located is not None:
            chan.emit_new(Divergence, model=label, **divergence_fields(located, failed_outputs[0]["output"]))
            if located.note:
                chan.note("localize", located.note)
        elif not locate.said:  # searched, and no node was it: never a silent end
            chan.note("localize", "no node of the graph leaves tolerance when fed the reference's values: the "
                      "difference comes from outside the graph's ops (a backend's own code around them, say)")
        return located
    if not failed:
        return None
    chan.stage("localize the backward")
    located = locate(backward=True)
    if located is not None:
        chan.emit_new(Divergence, model=label, **divergence_fields(located, failed[0]["output"]))
    else:
        chan.note("localize", "only gradients differ, and no node of the backward graph leaves tolerance on "
                  "the values eager's forward saved for it: the difference comes from what the compiled "
                  "forward saved, or from between the graphs")
    return located
