"""kdiff's sides, child-process side: how one side (reference, baseline, float64, test) is run, each
from the values the model file set, on its own copy of the inputs, its outputs and what it wrote in
place as named leaves (:class:`Sides`), and which sides a verdict needs, run in order (:class:`Runs`).
Split from :mod:`.work`, which loads the model and turns these leaves into diffs, gradients and a
divergence: this module runs the model and compares nothing.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pt2kit.runtime.common.caches import CacheUse
from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.outcome import CannotJudge, Compiled
from pt2kit.runtime.common.precision import precision_state
from pt2kit.runtime.common.tensors import unjag
from pt2kit.runtime.common.text import exception_line as _why
from pt2kit.runtime.shims.torchapi import mode_settings, reset_dynamo
from pt2kit.runtime.worker.outputs import flatten
from pt2kit_portable import copy_inputs, undefined_values

from .raised import eager_fails
from .torchapi import original_module


def seeded(seed: int, fn: Any) -> Any:
    import torch

    torch.manual_seed(seed)
    return fn()


class Sides:
    """Runs one side (:meth:`run`): its outputs as leaves; the precision settings it ran under (``states``)
    and, for a training step, its gradients (``trained``), each by role. Near-ties in data-dependent
    selections are watched in the first eager run only."""

    def __init__(self, loaded: Any, seed: int, train: bool, ties: Any, chan: Any,
                 harness_settings: dict[str, str]) -> None:
        self.loaded, self.seed, self.train, self.ties, self.chan = loaded, seed, train, ties, chan
        self.watch_ties = True
        # Inductor settings every side runs under that the script did not (in the FX graph cache's key)
        self.harness_settings = harness_settings
        self.states: dict[str, dict[str, Any]] = {}
        self.trained: dict[str, list[tuple[str, Any]]] = {}
        self.nothing: str | None = None  # the test side's run in which Dynamo compiled no graph: why
        self.undefined: dict[str, str] = {}  # leaves whose values an op left undefined: the op (the first eager run's)
        # capture found the model file does not run here: only eager raising, the compiled side not, is judged
        self.cannot: CannotJudge | None = None
        # imports torch: not at kdiff --help (narrate imports this module)
        from pt2kit.runtime.worker.written import Start

        self.start = Start(loaded.model, loaded.inputs)  # every side starts from these values

    def run(self, backend: Any, role: str) -> list[tuple[str, Any]]:
        import torch

        from pt2kit.runtime.worker.training import step_inputs

        from . import backends
        from .grads import step

        loaded, seed = self.loaded, self.seed
        self.start.restore()  # parameters and buffers an earlier side wrote in place: back to the file's values
        # each side on its own copy, inputs that share a storage sharing the copy: a graph that writes into
        # its inputs (f(a, a[1]) adding to a) hands the next side the values the script handed it
        fn, inputs = backends.prepare(loaded.model, copy_inputs(loaded.inputs), backend)
        # torch.compile compiles on the first call: a compiled side's stage covers both
        verb = "compile and run" if backend.compile is not None else "run"
        self.chan.stage(f"{verb} {role} ({backend.name})")
        first = backend.compile is None and self.watch_ties  # the first eager run: what the model itself does
        watch = self.ties if first else contextlib.nullcontext()
        undefined = undefined_values() if first else contextlib.nullcontext()
        self.watch_ties = self.watch_ties and backend.compile is not None
        compiled = Compiled() if backend.compile is not None and role == "test" else contextlib.nullcontext()
        caches = CacheUse(self.harness_settings) if isinstance(compiled, Compiled) else contextlib.nullcontext()
        try:
            with torch.no_grad(), backends.context(backend), watch, undefined, compiled, caches:
                if self.train:  # outputs and gradients of one training step, on the copies it writes into
                    inputs = step_inputs(inputs)
                    out, self.trained[role] = seeded(seed, lambda: step(loaded, fn, inputs, train=True, copied=True))
                else:
                    out = seeded(seed, lambda: loaded.call(fn, inputs))
        except Exception as e:
            if backend.compile is not None or backend.float64:
                raise
            self.start.restore()
            with torch.no_grad():
                raise eager_fails(loaded.label, "eager run", e,
                                  lambda: seeded(seed, lambda: loaded.call(fn, inputs))) from None
        if self.cannot is not None and role == "reference":  # eager returned: capture's reason stands
            raise self.cannot
        reset_dynamo()
        if isinstance(compiled, Compiled) and compiled.nothing:
            self.nothing = compiled.nothing
        said = caches.line(mode_settings()) if isinstance(caches, CacheUse) else None
        if said:  # what the script's autotuning and FX graphs saved this compile, and what it redid
            self.chan.note("caches", said)
        self.states[role] = precision_state()
        leaves = unjag(flatten(out)) + self.start.written(original_module(fn), inputs)
        if first:
            self.undefined.update((n, op) for n, t in leaves if (op := undefined.made_by(t)))
            if self.undefined:
                from .records import undefined_line  # here: records imports torch, and --help must not

                self.chan.note("undefined", undefined_line(self.undefined))  # each kind of value apart
        return leaves


class Runs:
    """The runs a verdict needs, in order: the reference; an eager float32 baseline (the reference
    itself unless it is eager64); a float64 run for PyTorch's accuracy rule (the reference itself for
    eager64); the test. :meth:`again` runs them once more under other settings, the float64 run kept
    (no precision mode touches float64)."""

    def __init__(self, sides: Sides, ref: Any, test: Any, rule: str, label: str, chan: Any) -> None:
        from . import backends

        side = sides.run
        self.side, self.pair = side, sides.start.pair
        self.undefined = sides.undefined  # filled by the first eager run below
        self.ref, self.test, self.rule, self.chan = ref, test, rule, chan
        self.note: str | None = None
        self.f64 = ref if ref.float64 else backends.Backend("eager64", float64=True)
        self.fp64: list[tuple[str, Any]] | None = None
        if ref.float64:
            try:
                self.ref_leaves = self.fp64 = side(ref, "reference")
            except Exception as e:
                raise UsageError(f"--ref eager64: the float64 run of {label} fails ({_why(e)}); "
                                 "use --ref eager (the verdict then checks float64 only where it runs)") from None
        else:
            self.ref_leaves = side(ref, "reference")
        self.baseline = self.ref_leaves if not ref.float64 else None
        if self.rule == "fp64":
            if self.baseline is None:
                self.baseline = side(backends.Backend("eager"), "baseline")
            if self.fp64 is None:
                try:
                    self.fp64 = side(self.f64, "float64 reference")
                except Exception as e:
                    self.rule, self.note = "close", f"the float64 run fails ({_why(e)}): verdicts are assert_close's"
                    chan.note("fp64", self.note)
        if self.f64.narrowed:
            chan.note("narrowed", "the float64 run took float32 for ops with no float64 kernel: "
                      + ", ".join(self.f64.narrowed))
        self.test_leaves = side(test, "test")
        # a write one side did alone, at its starting value on the others; every side in the reference's order
        self.pair(self.ref_leaves, self.baseline, self.fp64, self.test_leaves)
        chan.stage("compare")

    def verdict(self, tie: Any = None) -> Any:
        from .records import Verdict

        return Verdict(rule=self.rule, fp64=dict(self.fp64 or []), baseline=dict(self.baseline or []),
                       baseline_name=self.ref.name if not self.ref.float64 else "eager", tie=tie,
                       undefined=self.undefined)

    def again(self, why: str) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]], Any]:
        """(reference, test, verdict) run again under the settings in force now."""
        from . import backends

        ref_leaves = self.fp64 if self.ref.float64 else self.side(self.ref, f"reference {why}")
        baseline = ref_leaves if not self.ref.float64 else self.side(backends.Backend("eager"), f"baseline {why}")
        test_leaves = self.side(self.test, f"test {why}")
        self.pair(ref_leaves, baseline, test_leaves)
        v = self.verdict()
        v.baseline = dict(baseline or [])
        return ref_leaves or [], test_leaves, v
