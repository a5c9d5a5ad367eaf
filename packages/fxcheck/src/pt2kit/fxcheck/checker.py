"""The fxcheck backend: capture every graph of a compile, check it, then run it.

For each graph Dynamo hands over it records the Dynamo FX graph, traces the aten graph before
functionalization (only when a deny list could need it), and runs AOTAutograd without
decompositions to get the functional forward and, when gradients are needed, the backward graph
(taken from the partitioner, so it is captured even if backward never runs). Every graph gets a
`graph` record and its findings `violation` records, in that order.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from pt2kit.schema import Profile, Record, Store, Violation
from pt2kit_portable import is_dynamo_restart

from . import graphview, records, torchapi
from .checks import run_checks


class ConstraintViolation(RuntimeError):
    """Raised by a strict library backend once a graph's findings are all recorded."""


class Checker:
    """A ``torch.compile`` backend; ``findings`` and ``records`` hold what it found."""

    def __init__(
        self,
        profile: Profile | None = None,
        *,
        strict: bool | None = None,
        emit: Callable[[Record], Any] | None = None,
        store: Store | None = None,
        run: str = "library",
        model: str | None = None,
        inductor: bool = False,
        on_stage: Callable[[str], None] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.profile = profile or Profile()
        self.strict = self.profile.strict if strict is None else strict
        self.records: list[Record] = []
        self.findings: list[Violation] = []
        self._emit = emit or self.records.append
        self.store = store
        self.run = run
        self.model = model
        self.inductor = inductor
        self.on_stage = on_stage or (lambda stage: None)
        self.warn = warn or (lambda msg: print(f"fxcheck: warning: {msg}", file=sys.stderr))
        self.graphs = 0
        self.errors = 0  # graphs the backend failed to capture or check
        self._held: list[Record] | None = None  # a graph's records until its capture is done

    # -- records ---------------------------------------------------------------------------
    def emit(self, rec: Record) -> None:
        if self._held is not None:
            self._held.append(rec)
            return
        if self._emit is not self.records.append:
            self.records.append(rec)
        self._emit(rec)

    def _graph(self, gm: torch.fx.GraphModule, phase: str, index: int) -> None:
        self.emit(records.graph(gm, phase, index, run=self.run, model=self.model, store=self.store))

    def _check(self, view: graphview.GraphView, phase: str | None = None) -> int:
        """Check one graph; one finding per distinct (constraint, op, tensor, message, subgraph), with a
        count (the same layer repeated, LayerNorm's mean and rstd of one shape). A branch or loop body
        is a place of its own: a denied op in a cond branch is not folded into the same op outside."""
        distinct: dict[tuple[Any, ...], Violation] = {}
        for f in run_checks(view, self.profile):
            v = records.violation(f, phase or view.phase, view.index, run=self.run, model=self.model)
            key = (v.constraint, v.op, v.dtype, tuple(v.shape or ()), v.message.split(": ", 1)[-1], v.subgraph)
            if key in distinct:
                distinct[key].count += 1
            else:
                distinct[key] = v
        for v in distinct.values():
            self.findings.append(v)
            self.emit(v)
        return len(distinct)

    # -- the backend -----------------------------------------------------------------------
    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.on_stage("compile")
        index = self.graphs
        self.graphs += 1
        # a graph's records wait until its capture ends: where Dynamo only raised through us to trace the
        # frame again (a float turned dynamic: TensorifyScalarRestartAnalysis), the graph is handed over
        # again, and this attempt leaves no record, no finding and no count (it read "not captured", exit 1)
        self._held, held = [], self._held
        restart = False
        try:
            return self._capture(gm, example_inputs, index)
        except Exception as e:
            restart = is_dynamo_restart(e)
            if restart:
                self.graphs -= 1
                self.findings = [v for v in self.findings if v.graph != index]
            elif not isinstance(e, ConstraintViolation):
                self.errors += 1
                self.emit(records.capture_error(gm, index, e, run=self.run, model=self.model))  # held, last
            raise
        finally:  # the graph's records go out unless Dynamo is about to hand it over again
            mine, self._held = self._held, held
            for rec in () if restart else mine:
                self.emit(rec)

    def _capture(self, gm: torch.fx.GraphModule, example_inputs: list[Any], index: int) -> Callable[..., Any]:
        found = 0
        self._graph(gm, "dynamo", index)
        found += self._check(graphview.build(gm, "dynamo", index))
        if self.profile.deny:
            try:
                pre = torchapi.pre_functional_graph(gm, example_inputs)
            except Exception as e:  # a graph make_fx cannot trace: the functional checks still run
                self.warn(f"graph {index}: no pre-functionalization trace ({type(e).__name__}: {e}); "
                          "in-place ops are checked as their functional forms")
            else:
                found += self._check(graphview.build(pre, "forward", index, pre_functional=True), "forward")
        labels = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
        pending: list[tuple[torch.fx.GraphModule, torch.fx.GraphModule]] = []
        counts = {"found": found}

        def emit_backward() -> None:
            while pending:
                joint, bw = pending.pop()
                self._graph(bw, "backward", index)
                view = graphview.build(bw, "backward", index, fallback_modules=graphview.seq_nr_modules(joint))
                counts["found"] += self._check(view)

        def fw_compiler(g: torch.fx.GraphModule, ex: list[Any]) -> Any:
            self._graph(g, "forward", index)
            view = graphview.build(g, "forward", index, inputs=labels)
            counts["found"] += self._check(view)
            emit_backward()
            return torchapi.boxed(g.forward)

        compiled = torchapi.aot_capture(gm, example_inputs, fw_compiler, lambda j, b: pending.append((j, b)))
        emit_backward()
        if self.strict and counts["found"]:
            first = next(v for v in reversed(self.findings) if v.graph == index)
            raise ConstraintViolation(f"graph {index}: {counts['found']} constraint violation(s); e.g. {first.message}")
        if self.inductor:
            compiled = torchapi.inductor_compile(gm, example_inputs)
        self.on_stage("run")
        return compiled


def backend(profile: Profile | str | None = None, *, strict: bool | None = None, **overrides: Any) -> Checker:
    """A ``torch.compile`` backend that checks every graph against ``profile`` and then runs it.

    ``profile`` is a :class:`~pt2kit.schema.Profile`, a shipped profile's name or a TOML path;
    keyword overrides (``align=16``, ``dtypes=["float32"]``, ``deny=[...]``) apply on top. Findings
    are in ``.findings`` (``violation`` records); with ``strict`` the compile raises
    :class:`ConstraintViolation` once a graph's findings are all recorded.
    """
    from .profiles import load_profile, merge

    base = profile if isinstance(profile, Profile) else load_profile(profile) if profile else Profile()
    return Checker(merge(base, overrides), strict=strict)
