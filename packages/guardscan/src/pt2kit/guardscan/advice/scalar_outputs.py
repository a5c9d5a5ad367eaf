"""scalar_outputs: ``.item()`` (or ``.tolist()``) broke the graph.

Why: without ``capture_scalar_outputs`` Dynamo cannot put a tensor-to-Python-number conversion in
the graph, so it ends the graph there and starts another after it: two graphs, a trip through
Python between them, and a guard on the number's value. With the flag the scalar stays symbolic
(an unbacked SymInt/SymFloat) and the graph stays whole.

Example: ``s = y.sum().item()`` at m.py:8 -> ``torch._dynamo.config.capture_scalar_outputs = True``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Findings
from .base import AdviceItem, Rule, where

MARKERS = ("capture_scalar_outputs", "Tensor.item()", "Tensor.tolist()", "GB0124")


def is_scalar_break(reason: str, gb_id: str | None, call: str | None) -> bool:
    text = " ".join(x for x in (reason, gb_id, call) if x)
    return any(m in text for m in MARKERS)


class ScalarOutputs(Rule):
    name = "scalar_outputs"

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        for b in f.breaks:
            i = b.info
            if is_scalar_break(i.reason, i.gb_id, i.call):
                yield AdviceItem(self.name, f"{i.call or '.item()'} at {where(i.file, i.line)} breaks the graph; "
                                 "let Dynamo capture the scalar instead",
                                 "torch._dynamo.config.capture_scalar_outputs = True", where(i.file, i.line))


SCALAR_OUTPUTS = ScalarOutputs()
