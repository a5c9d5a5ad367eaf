"""contiguous: compute ops receive contiguous tensors.

Why: DMA engines and many kernels read dense row-major blocks; a strided operand needs a gather or
a copy first. Only what a compute op actually receives counts: views themselves (``aten.t``,
``aten.transpose``) are free and never flagged. Matrix multiplies (mm, addmm, bmm, baddbmm) take an
operand transposed in its last two dimensions natively (GEMM transpose flags), so a plain Linear,
whose ``aten.t`` weight feeds ``aten.addmm``, is clean. Copies whose job is to change the layout
(``aten.clone``, ``aten._to_copy``) are the fix, not the problem, and are exempt.

Example: ``x.transpose(0, 1) + 1`` gives one finding, on ``aten.add.Tensor``, naming the
non-contiguous input and its strides.
"""

from __future__ import annotations

from collections.abc import Iterator

from pt2kit.schema import Profile

from ..graphview import GraphView
from .base import Constraint, Finding, describe

GEMM = frozenset({"aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.matmul", "aten._int_mm"})
LAYOUT_COPIES = frozenset({"aten.clone", "aten._to_copy", "aten.contiguous", "aten.copy"})


class ContiguousConstraint(Constraint):
    name = "contiguous"

    def enabled(self, profile: Profile) -> bool:
        return profile.contiguous

    def check(self, graph: GraphView, profile: Profile) -> Iterator[Finding]:
        for node in graph.nodes:
            if not node.compute or node.packet in LAYOUT_COPIES:
                continue
            for name, t in node.inputs:
                if not t.strided or t.contiguous:
                    continue
                if node.packet in GEMM and t.contiguous_transposed:
                    continue
                yield Finding(
                    self.name,
                    f"{node.op} receives {name}, {describe(t)} with strides {t.stride}, which is not contiguous",
                    node,
                    t,
                )


CONTIGUOUS = ContiguousConstraint()
