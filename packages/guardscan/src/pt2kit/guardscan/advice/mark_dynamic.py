"""mark_dynamic: a tensor's size changed between calls and Dynamo recompiled for it.

Why: with automatic dynamic shapes (the default) the first size change costs one recompile, after
which the dimension is dynamic; that recompile is expected and happens once. With ``dynamic=False``,
or for a dimension that keeps taking new sizes, every size is a new compile. Marking the dimension
dynamic before the first call compiles one graph for all sizes and skips even the first recompile.

Example: ``x`` of shape [4, 8] then [8, 8] gives ``L['x'].size()[0] == 4`` failing; the change is
``torch._dynamo.mark_dynamic(x, 0)`` before calling the compiled model.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Findings
from .base import AdviceItem, Rule, user_input


class MarkDynamic(Rule):
    name = "mark_dynamic"

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        seen: set[tuple[str, int]] = set()
        triggers: set[str | None] = set()
        for r in f.recompiles:
            if r.kind != "size" or r.tensor is None or r.dim is None or (r.tensor, r.dim) in seen or r.raised:
                continue
            if r.trigger in triggers:
                continue  # later frames of the same call (a resume function, a helper): their tensors follow
            triggers.add(r.trigger)
            seen.add((r.tensor, r.dim))
            x = user_input(f, r)
            if r.expected:
                msg = (f"dim {r.dim} of {x.said} changed ({r.trigger}); automatic dynamic shapes recompiled once "
                       f"and made it dynamic, as expected. If it varies in production, mark it dynamic up front "
                       f"and skip this recompile.")
            else:
                msg = (f"dim {r.dim} of {x.said} changed ({r.trigger}) and {r.function or 'the frame'} recompiled "
                       f"for it; every new size may recompile. Mark the dimension dynamic.")
            yield AdviceItem(self.name, msg, f"torch._dynamo.mark_dynamic({x.code}, {r.dim})  # {x.before}",
                             x.source)


MARK_DYNAMIC = MarkDynamic()
