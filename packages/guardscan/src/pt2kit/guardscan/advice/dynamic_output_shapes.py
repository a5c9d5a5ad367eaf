"""dynamic_output_shapes: an op whose output size depends on the data (``nonzero``, ``unique``,
boolean-mask indexing) broke the graph.

Why: by default Dynamo does not trace ops whose output shape is only known at run time, so the
graph ends at each of them. ``capture_dynamic_output_shape_ops`` lets them in with an unbacked
size; backends that cannot handle such sizes still work, just without fusing across them.

Example: ``idx = torch.nonzero(mask)`` -> ``torch._dynamo.config.capture_dynamic_output_shape_ops = True``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Findings
from .base import AdviceItem, Rule, where

MARKERS = ("dynamic shape operator", "capture_dynamic_output_shape_ops", "data-dependent output shape",
           "data dependent output shape")


class DynamicOutputShapes(Rule):
    name = "dynamic_output_shapes"

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        for b in f.breaks:
            i = b.info
            text = " ".join([i.reason, i.explanation or "", *i.hints])
            if any(m in text for m in MARKERS):
                yield AdviceItem(self.name, f"{i.call or 'an op with a data-dependent output size'} at "
                                 f"{where(i.file, i.line)} breaks the graph; let Dynamo capture it",
                                 "torch._dynamo.config.capture_dynamic_output_shape_ops = True",
                                 where(i.file, i.line))


DYNAMIC_OUTPUT_SHAPES = DynamicOutputShapes()
