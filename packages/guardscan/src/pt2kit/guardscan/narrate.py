"""What guardscan says on stderr, read from the typed records it writes (live runs and traces alike)."""

from __future__ import annotations

from typing import Any

import msgspec

from pt2kit.runtime.common.errors import EXIT_FINDINGS, EXIT_OK
from pt2kit.runtime.common.outcome import nothing_line
from pt2kit.runtime.parent.narrate import Narrator as Base
from pt2kit.schema import Advice, GraphBreak, Recompile, Variant

from .records import Counts


class Narrator(Base):
    def __init__(self, say: Any, label: str, job: Any = None) -> None:
        super().__init__(say, label, job)
        self.reasons: list[str] = []

    def on_graph_break(self, b: GraphBreak) -> None:
        self.reasons.append(b.reason)
        code = f"  {b.code}" if b.code else ""
        gb = f" [{b.gb_id}]" if b.gb_id else ""
        self.say(f"{self.label}: graph break at {b.source or '?'}{code}: {b.reason}{gb}")

    def on_recompile(self, r: Recompile) -> None:
        what = "expected (automatic dynamic shapes)" if r.expected else "recompiled"
        if not r.compiled:
            what = "recompile limit hit, ran eagerly"
        at = f" at {r.source}" if r.source else ""
        trig = f" on {r.trigger}" if r.trigger else ""
        self.say(f"{self.label}: {r.frame} {what}{trig}: guard {r.guard or r.reason} failed{at}")

    def on_variant(self, v: Variant) -> None:
        frames = f" ({', '.join(v.frames)})" if v.frames else ""
        err = f": {v.error}" if v.error else ""
        self.say(f"{self.label}: call with {v.name}: {v.outcome}{frames}{err}")

    def on_advice(self, a: Advice) -> None:
        change = f"\n    {a.change}" if a.change else ""
        self.say(f"{self.label}: advice [{a.rule}]: {a.message}{change}")

    def finish(self, value: Counts | dict[str, Any], notes: dict[str, Any]) -> int:
        """The summary of one model's (or one trace log's) :class:`Counts` (a worker's come back as a dict);
        exit 1 on a graph break, an unexpected recompile or the recompile limit hit."""
        c = value if isinstance(value, Counts) else msgspec.convert(value, Counts)
        expected = c.recompiles - c.unexpected
        totals = ""
        if c.all_graphs:
            why = f": {c.why_counts}" if c.why_counts else ""
            totals = (f" (as torch._dynamo.explain counts the first call: {c.all_graphs} graph(s), "
                      f"{c.all_breaks} break(s){why})")
        self.say(f"{self.label}: {c.graphs} distinct graph(s), {c.breaks} distinct graph break(s)"
                 f"{totals}, {c.unexpected} recompile(s)" + (f" (+{expected} expected)" if expected else "")
                 + f", {c.guards} guards")
        if not c.graphs and isinstance(value, dict):  # a worker's live run (not a trace) compiled nothing
            self.say(f"{self.label}: {nothing_line(list(dict.fromkeys(self.reasons)))}")
            return EXIT_FINDINGS
        return EXIT_FINDINGS if c.breaks or c.unexpected or c.limit_hits else EXIT_OK
