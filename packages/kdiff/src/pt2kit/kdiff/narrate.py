"""What kdiff says on stderr, read from the typed records its worker writes.

Guarantees: a failing output is one ``FAIL`` line each, as its diff comes. Failing gradients are one line
together: a wrong op in a backward reaches the gradient of every parameter upstream of it (one planted
``threshold_backward`` in a BERT step fails 22), so a line each buried the cause. That line comes after the
first divergence's (the op), else before the summary, and counts them, names the first two, and the one
that differs most. stdout keeps every diff record as it was: the stream is the data, this is narration.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from pt2kit.runtime.common.errors import EXIT_FINDINGS, EXIT_OK
from pt2kit.runtime.parent.narrate import Narrator as Base
from pt2kit.schema import Diff, Divergence, as_float

from .work import Summary


def _size(x: float) -> float:
    """A max abs to rank by: NaN (a gradient that is NaN on one side) ranks above every number."""
    return math.inf if math.isnan(x) else x


class Narrator(Base):
    def __init__(self, say: Any, label: str, job: Any = None, captured: tuple[str, str] | None = None) -> None:
        super().__init__(say, label, job)
        self.failing: list[Diff] = []
        self.grads: list[Diff] = []  # failing gradients not yet said: one line for them all (_say_grads)
        # (the captured model file, the user's line that called the compiled code) of a piped capture record
        self.captured = captured

    def on_diff(self, d: Diff) -> None:
        if d.passed and (d.note or "").startswith("the reference holds"):
            self.say(f"{self.label}: {d.output}: {d.note}")
        elif d.rule == "tie":
            self.say(f"{self.label}: TIE {d.output}: {d.note}")
        elif d.rule == "precision":
            self.say(f"{self.label}: PRECISION {d.output}: {d.note}")
        elif not d.passed:
            self.failing.append(d)
            if d.output.startswith("grad."):
                self.grads.append(d)
            else:
                self._say_fail(d)

    def _say_fail(self, d: Diff) -> None:
        m = d.metrics
        worst = f" at {d.worst_index}: ref {d.worst_ref} test {d.worst_test}" if d.worst_index is not None else ""
        detail = f"max abs {as_float(m.max_abs):.4g}, {m.mismatches} mismatched{worst}" if m else d.note or ""
        self.say(f"{self.label}: FAIL {d.output} ({d.test} vs {d.ref}): {detail}")

    def _say_grads(self) -> None:
        """The failing gradients, once: one alone as any FAIL line, more as one line that counts them."""
        grads, self.grads = self.grads, []
        if len(grads) == 1:
            self._say_fail(grads[0])
        if len(grads) < 2:
            return
        named = ", ".join(d.output for d in grads[:2]) + (f" and {len(grads) - 2} more" if len(grads) > 2 else "")
        sized = [d for d in grads if d.metrics is not None]
        most = max(sized, key=lambda d: _size(as_float(d.metrics.max_abs))) if sized else None
        largest = f"; the largest, max abs {as_float(most.metrics.max_abs):.4g}, in {most.output}" if most else ""
        self.say(f"{self.label}: FAIL {len(grads)} gradients differ ({grads[0].test} vs {grads[0].ref}): "
                 f"{named}{largest}")

    def on_divergence(self, v: Divergence) -> None:
        where = f" at {v.source}" if v.source else ""
        inside = f" in {v.subgraph}" if v.subgraph else ""
        if v.phase == "backward":  # the gradient of which forward op, at the user's line of that op
            inside += ", backward graph" + (f", the gradient of {v.forward_op}" if v.forward_op else "")
        if self.captured and v.source and v.source.rpartition(":")[0] == self.captured[0]:
            # a node with no line of the user's (torch's own module compiled whole: nn.Sequential)
            where += f" (a line of the captured graph, none of yours; its compiled code was called at {self.captured[1]})"
        self.say(f"{self.label}: first divergence: {v.op or v.node} (node {v.node}{inside}){where}"
                 + (f"  {v.code}" if v.code else ""))
        self._say_grads()  # what follows from it

    def finish(self, value: Any, notes: dict[str, Any]) -> int:
        self._say_grads()  # no divergence said them (--no-localize, or none found)
        for key in ("backend_settings", "caches", "fp64", "narrowed", "hops", "undefined", "localize"):
            if key in notes:
                self.say(f"{self.label}: {notes[key]}")
        if "precision_own" in notes:
            self.say(f"{self.label}: the model turned on {notes['precision_own']}: judged with it off, as PyTorch's "
                     "accuracy harness judges (--precision as-configured keeps it)")
        v = msgspec.convert(value, Summary)
        if v.frozen:
            self.say(f"{self.label}: {v.frozen} frozen parameters: no gradient")
        if v.no_grad:
            names = v.no_grad
            self.say(f"{self.label}: {len(names)} leaves got no gradient on either side, not compared: "
                     + ", ".join(names[:5]) + (", ..." if len(names) > 5 else ""))
        n = v.diffs
        extra = [f"{v.written} written in place"] if v.written else []
        extra += [f"{v.by_fp64} within float64 noise"] if v.by_fp64 else []
        extra += [f"{v.ties} after a near-tie"] if v.ties else []
        extra += [f"{v.precision} only with the model's precision modes"] if v.precision else []
        extra += [notes["autocast"]] if "autocast" in notes else []
        # fallback_random said: a model that draws random numbers passes because the compiled side draws eager's
        # (a script comparing them itself, without it, sees Inductor's own numbers differ: tests/bisect/fallback_random.py)
        extra += [notes["precision"] if "precision" in notes
                  else "PyTorch's accuracy-harness precision: TF32 off, Inductor's fallback_random on"]
        if v.nothing_compiled and not self.failing:  # eager against eager: no verdict on the compiler
            self.say(f"{self.label}: {v.nothing_compiled}; {n} lea{'f' if n == 1 else 'ves'} compared, none of them compiled: "
                     f"no verdict on {self.job.test}")
            return EXIT_FINDINGS
        self.say(f"{self.label}: {n - len(self.failing)} of {n} leaves pass ({self.job.test} vs {self.job.ref}"
                 + "".join(f"; {e}" for e in extra) + ")")
        return EXIT_FINDINGS if self.failing else EXIT_OK
