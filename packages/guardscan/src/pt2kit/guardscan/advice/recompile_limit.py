"""recompile_limit: a function recompiled until Dynamo gave up and ran it eagerly.

Why: after ``torch._dynamo.config.recompile_limit`` compiles of one function (8 by default),
Dynamo stops compiling it and every further call runs in eager mode, silently slow. Raise the limit
only when the compiles are legitimate (a few fixed shapes); otherwise remove their cause
(mark_dynamic, one dtype), which the other advice names.

Example: 9 batch sizes with ``dynamic=False`` -> ``torch._dynamo.config.recompile_limit = 16``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Findings
from .base import AdviceItem, Rule


class RecompileLimit(Rule):
    name = "recompile_limit"

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        hit = [r for r in f.recompiles if r.failed]
        if not hit and not f.limit_hits:
            return
        limit = f.recompile_limit or 8
        what = hit[0].function if hit else "a function"
        yield AdviceItem(self.name, f"{what} hit the recompile limit ({limit}) and now runs eagerly; remove the "
                         "cause of the recompiles, or raise the limit if they are legitimate",
                         f"torch._dynamo.config.recompile_limit = {limit * 2}", hit[0].source if hit else None)


RECOMPILE_LIMIT = RecompileLimit()
