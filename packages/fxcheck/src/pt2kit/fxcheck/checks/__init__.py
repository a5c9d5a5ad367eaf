"""The constraints fxcheck knows, registered in one place: add a module, then add it here."""

from __future__ import annotations

from pt2kit.schema import Profile

from ..graphview import GraphView
from .align import ALIGN
from .base import Constraint, Finding
from .contiguous import CONTIGUOUS
from .deny import DENY
from .dtype import DTYPE
from .memory import MEMORY

CONSTRAINTS: tuple[Constraint, ...] = (DTYPE, ALIGN, MEMORY, CONTIGUOUS, DENY)


def run_checks(graph: GraphView, profile: Profile) -> list[Finding]:
    out: list[Finding] = []
    for c in CONSTRAINTS:
        if not c.enabled(profile):
            continue
        if graph.pre_functional:
            if c is DENY:  # the pre-functional graph exists for in-place ops only
                out.extend(c.check(graph, profile))
        elif graph.phase in c.phases:
            out.extend(c.check(graph, profile))
    return out


__all__ = ["CONSTRAINTS", "Constraint", "Finding", "run_checks"]
