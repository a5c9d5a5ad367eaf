"""shape_branch: Python control flow on a size compiled one graph per branch.

Why: ``if x.shape[0] > 4:`` on a dynamic size puts a guard on it (``5 <= L['x'].size()[0]``); a
size on the other side of the test fails that guard and compiles the other branch. Each branch
costs a compile and a cache entry, and the recompile limit counts them. ``torch.cond`` keeps both
branches in one graph; often the branch can be written without Python control flow at all
(``torch.where``, arithmetic on the size).

Example: ``if x.shape[0] > 4: y = x * 2 else: y = x + 1`` ->
``y = torch.cond(x.shape[0] > 4, lambda x: x * 2, lambda x: x + 1, (x,))``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Findings
from .base import AdviceItem, Rule

SIZE_MARKERS = (".size()", ".shape", ".stride()", "numel()")


class ShapeBranch(Rule):
    name = "shape_branch"

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        seen: set[str] = set()
        for r in f.recompiles:
            if r.kind != "guard" or not r.guard or not any(m in r.guard for m in SIZE_MARKERS):
                continue
            if not r.user_code:
                continue  # a guard torch's own code made (a conv, a reshape): not the user's branch to rewrite
            key = r.source or r.guard
            if key in seen:
                continue
            seen.add(key)
            line = f" ({r.code})" if r.code else ""
            yield AdviceItem(self.name, f"the guard {r.guard} failed: control flow on a size at "
                             f"{r.source or 'a user line'}{line} compiles a graph per branch. Keep both branches "
                             "in one graph with torch.cond, or write the branch without Python control flow",
                             "torch.cond(pred, true_fn, false_fn, operands)  # pred on the size, both branches traced",
                             r.source)


SHAPE_BRANCH = ShapeBranch()
