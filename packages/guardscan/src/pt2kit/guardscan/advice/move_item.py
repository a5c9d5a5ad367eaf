"""move_item: keep the value a tensor, or call ``.item()`` outside the compiled function.

Why: a Python number taken out of a tensor ends the graph (see scalar_outputs) and, when its value
feeds later code, is guarded on or recompiled for. Most such numbers are only used in more tensor
math, where a 0-d tensor works as well and the graph stays whole; when the number is needed in
Python (logging, a loop bound), taking it after the compiled call costs nothing inside it.

Example: ``s = y.sum().item()`` -> ``s = y.sum()`` (a 0-d tensor), and ``.item()`` where the result
is printed.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Findings
from .base import AdviceItem, Rule, where
from .scalar_outputs import is_scalar_break


class MoveItem(Rule):
    name = "move_item"

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        for b in f.breaks:
            i = b.info
            if not is_scalar_break(i.reason, i.gb_id, i.call) or not i.code or ".item()" not in i.code:
                continue
            yield AdviceItem(self.name, "keep the value a 0-d tensor inside the compiled code, or move the "
                             ".item() after the compiled call",
                             i.code.replace(".item()", "", 1) + "  # a 0-d tensor; .item() outside the compiled call",
                             where(i.file, i.line))


MOVE_ITEM = MoveItem()
