"""minify's ``--mode infer`` judgement of the original model, worker side: the model run eagerly and
compiled (under no_grad, from one seed, what it writes in place judged too), and how it fails: a
compile error, NaN/Inf, an accuracy failure by the verdict asked for, a crash or a missing error where
eager raises, or none. The counterpart of :mod:`.train` (``--mode train``'s one training step); split
from :mod:`.work`, which loads the model, captures its graphs and answers each request, because this is
the judging of the whole model alone, run once per minification, and never touches a candidate.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pt2kit.runtime.common.config import apply_config
from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.modelfile import backend_callable
from pt2kit.runtime.common.outcome import Compiled
from pt2kit.runtime.common.tensors import unjag
from pt2kit.runtime.common.text import exception_line
from pt2kit.runtime.shims.torchapi import reset_dynamo
from pt2kit.runtime.worker.accuracy import differs
from pt2kit.runtime.worker.outputs import flatten
from pt2kit_portable import undefined_values

from ..job import Job
from ..judge import harness, verdicts


def judge(loaded: Any, job: Job, send: Any) -> dict[str, Any]:
    """How the model fails, run eagerly and with the backend: a compile error, NaN/Inf, an accuracy
    failure by the verdict asked for, or none (``kind`` None, with what was seen); a crash or a missing error
    where eager raises (:func:`_eager_raised`)."""
    import torch

    from pt2kit.runtime.worker.written import Start

    start = Start(loaded.model, loaded.inputs)  # what a run writes in place is judged too, each run from here
    torch.manual_seed(job.seed)
    with torch.no_grad():
        try:
            with undefined_values() as seen:  # what no op defined (torch.empty's memory) is never compared
                eager = _outputs(loaded.call(loaded.model)) + start.written(loaded.model, loaded.inputs)
        except Exception as e:  # the model's own bug, as kdiff says it: bad input, not a failure to minify
            got = _eager_raised(loaded, job, e, start, send) if job.failure in ("auto", "crash", "missing-error") else None
            if got is not None:
                return got
            raise UsageError(f"{loaded.label}: the model's own eager run fails, so there is no "
                             f"compiler failure to minify (the model, not the compiler): {exception_line(e)}") from None
    harness.sync()  # an eager kernel's device-side error is eager's: raised here, not in the compiled run
    undefined = {n for n, t in eager if seen.made_by(t)}
    eager = [(n, t) for n, t in eager if n not in undefined]
    backend = backend_of(job.backend)
    start.restore()
    try:
        with Compiled() as watched:
            test = _compiled_outputs(loaded, job, backend) + start.written(loaded.model, loaded.inputs)
    except Exception as e:
        return {"kind": "compile-error", "signature": verdicts.exception_signature(e), "detail": str(e)[:2000]}
    if watched.nothing and backend != "aoti":  # the compiled run was eager code: no compiler failure is in it
        return {"kind": None, "detail": "passes", "nothing_compiled": watched.nothing}
    test = [(n, t) for n, t in test if n not in undefined]
    got = verdicts.nonfinite([t for _, t in test])
    if got and (job.failure in ("auto", "nan")) and not verdicts.nonfinite([t for _, t in eager]):
        return {"kind": "nan", "signature": got}
    if job.failure == "nan" and got:
        return {"kind": "nan", "signature": f"{got} (eager too)"}
    start.pair(eager, test)  # a write one side did alone, at its starting value on the other; eager's order
    start.restore()
    pairs = list(zip(test, eager, strict=False))
    if job.ref == "eager" and not any(differs(t, r, None) for (_, t), (_, r) in pairs):
        return {"kind": None, "detail": "passes assert_close"}  # no float64 run needed to say so
    fp64 = _float64_outputs(loaded, job.seed, start)
    start.restore()  # the search's own runs start where the model file does
    for (name, t), (_, r) in pairs:
        why = differs(t, r, fp64.get(name), job.ref, job.rule)
        if why:
            return {"kind": "accuracy", "signature": "accuracy", "detail": f"{name}: {why}",
                    "verdicts": f"{name}: {_verdicts(t, r, fp64.get(name))}"}
    return {"kind": None, "detail": next((f"{n}: {_verdicts(t, r, fp64.get(n))}" for (n, t), (_, r) in pairs
                                          if differs(t, r, None)), "passes")}


def _eager_raised(loaded: Any, job: Job, e: Exception, start: Any, send: Any) -> dict[str, Any] | None:
    """Eager raised ``e``: the compiled run, said to the parent first, for where it kills this process by a
    signal instead (Inductor's C++ kernel dividing an integer by zero: SIGFPE), which is the failure; where
    it returns, the missing error is (unless a crash is asked for); None where it raises too, in any form
    (the model's own failure, then)."""
    raised = verdicts.exception_signature(e)
    send({"t": "eager", "raised": raised})
    start.restore()
    try:
        _compiled_outputs(loaded, job, backend_of(job.backend))
    except Exception:
        return None
    finally:
        start.restore()
    return None if job.failure == "crash" else {"kind": "missing-error", "signature": raised, "eager": raised,
                                                "detail": f"the compiled side returns where eager raises {raised}"}


def _outputs(out: Any) -> list[tuple[str, Any]]:
    """A model's outputs as (name, tensor) leaves, a jagged one as its values and offsets."""
    return unjag(flatten(out))


def _compiled_outputs(loaded: Any, job: Job, backend: Any) -> list[tuple[str, Any]]:
    """The model's outputs compiled with ``backend``, under the run's config; a kernel's device-side
    error is raised here, as the compiled side's."""
    import torch

    reset_dynamo()
    with apply_config(job.config), torch.no_grad():
        torch.manual_seed(job.seed)
        if backend == "aoti":
            test = _outputs(_aoti_call(loaded))
        else:
            test = _outputs(loaded.call(torch.compile(loaded.model, backend=backend)))
        harness.sync()
    return test


def _verdicts(test: Any, eager: Any, fp64: Any) -> str:
    """Both of kdiff's rules on one output, with their numbers: how much fails assert_close, and where
    the compiled and eager runs stand against float64."""
    import torch

    from pt2kit.runtime.worker.accuracy import accuracy_rule, default_tolerances

    if not (isinstance(test, torch.Tensor) and isinstance(eager, torch.Tensor) and eager.is_floating_point()
            and test.shape == eager.shape):
        return "differs"
    atol, rtol = default_tolerances(eager.dtype)
    bad = int((~torch.isclose(test.to(eager.device), eager, rtol=rtol, atol=atol, equal_nan=True)).sum())
    said = f"fails assert_close, {100 * bad / max(eager.numel(), 1):.3g}% of elements" if bad else "passes assert_close"
    if not isinstance(fp64, torch.Tensor) or fp64.shape != test.shape:
        return said + " (no float64 run)"
    within = not differs(test, eager, fp64)
    r = accuracy_rule(test.to(eager.device), eager, fp64)  # the RMSEs differs judged by (agreeing NaN left out)
    rmse = f"compiled RMSE {r.rmse_test:.3g} vs eager {r.rmse_baseline:.3g}"
    return f"{said}, {'but is within' if within and bad else 'and is within' if within else 'and fails'} " \
           f"the float64 rule: {rmse}"


def _float64_outputs(loaded: Any, seed: int, start: Any) -> dict[str, Any]:
    """The model's outputs, and what it wrote in place (``start``'s leaves), from a float64 copy of it
    (empty where that run fails): the accuracy verdict's reference for how far rounding alone goes."""
    import torch

    from pt2kit.runtime.worker.accuracy import float64_copy, float64_mode

    with contextlib.suppress(Exception):
        m64, in64 = float64_copy(loaded.model, loaded.inputs)
        with torch.no_grad(), float64_mode():
            torch.manual_seed(seed)
            return dict(unjag(flatten(loaded.call(m64, in64))) + start.written(m64, in64))
    return {}


def _aoti_call(loaded: Any) -> Any:
    import torch

    args = loaded.inputs if isinstance(loaded.inputs, tuple) else ()
    kwargs = loaded.inputs if isinstance(loaded.inputs, dict) else {}
    return harness.aoti_run(torch.export.export(loaded.model, args, kwargs), args, kwargs)


def backend_of(spec: str) -> Any:
    """The backend as this worker calls it: a name torch registers, ``aoti``, or a file's callable."""
    if ":" not in spec:  # a name torch registers (capture checked it), or aoti
        return spec

    # its top level's settings put back: they are in the config each candidate is judged under (_load)
    return backend_callable(spec, "--backend")
