"""recompile_raised: a guard failed, Dynamo recompiled for the new input, and the compile raised.

Why: the new input broke the frame itself (a Linear given another input width: a shape error), so the
script's call failed there, compiled or not. That is no shape to make dynamic: mark_dynamic would only
move the same error; the call's input is what to fix.

Example: ``fc = nn.Linear(8, 4)`` called with width 8, then 6 -> the recompile raised
``RuntimeError('a and b must have same reduction dim ...')``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Findings
from .base import AdviceItem, Rule


class RecompileRaised(Rule):
    name = "recompile_raised"

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        for r in f.recompiles:
            if r.raised:
                on = f" on {r.trigger}" if r.trigger else ""
                yield AdviceItem(self.name, f"{r.compile_id} recompiled{on} and the compile raised {r.raised}: "
                                 "the new input breaks the frame itself, so it is not a size to make dynamic; "
                                 "fix the input the call passes", None, r.source)


RECOMPILE_RAISED = RecompileRaised()
