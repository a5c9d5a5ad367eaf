"""graph_break: any other graph break, with torch's own hint for it.

Why: every break ends a graph, runs the rest of the function in Python until Dynamo can start a
new one, and stops fusion across it. torch knows the fix for most breaks (its registry holds a
hint per ``GB`` id); this rule passes that hint on with the user's line, and says how to keep the
call out of the compiled region when it cannot be traced at all.

Example: ``print(y)`` at m.py:9 -> torch's hint, or move the call out / ``@torch.compiler.disable``
on a helper that holds it.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Findings
from .base import AdviceItem, Rule, where
from .dynamic_output_shapes import MARKERS as DYN_MARKERS
from .scalar_outputs import is_scalar_break


class GraphBreakHint(Rule):
    name = "graph_break"

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        for b in f.breaks:
            i = b.info
            text = " ".join([i.reason, i.explanation or "", *i.hints])
            if is_scalar_break(i.reason, i.gb_id, i.call) or any(m in text for m in DYN_MARKERS):
                continue  # their own rules say more
            hint = next((h for h in i.hints if "report" not in h.lower() and "issue" not in h.lower()), None)
            msg = f"{i.call or i.code or 'this code'} at {where(i.file, i.line)} breaks the graph ({i.reason})"
            if hint:
                msg += f"; torch's hint: {hint}"
            yield AdviceItem(self.name, msg,
                             "move the call out of the compiled code, or put it in a helper decorated with "
                             "@torch.compiler.disable", where(i.file, i.line))


GRAPH_BREAK = GraphBreakHint()
