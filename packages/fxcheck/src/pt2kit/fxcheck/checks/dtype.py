"""dtype: every tensor an aten op reads or writes has a dtype the hardware supports.

Why: an accelerator's datapaths are built for a few formats; a float64 tensor either falls back to
the host or does not run at all. Checked on the aten graphs, where the real ops are (a ``.double()``
is ``aten._to_copy``, a Linear is ``aten.addmm``). Integer and bool tensors (indices, masks) are
checked only when the profile lists an integer or bool dtype, so ``--dtypes float32,bfloat16`` is
about floating point.

Example: ``dtypes = ["float32"]`` and ``self.fc = nn.Linear(8, 4).double()`` gives
``aten.addmm.default produces float64[10, 4] (allowed: float32)`` at the line that calls ``self.fc``.
"""

from __future__ import annotations

from collections.abc import Iterator

from pt2kit.schema import Profile

from ..graphview import GraphView, TensorInfo
from .base import Constraint, Finding, describe


class DtypeConstraint(Constraint):
    name = "dtype"

    def enabled(self, profile: Profile) -> bool:
        return profile.dtypes is not None

    def check(self, graph: GraphView, profile: Profile) -> Iterator[Finding]:
        allowed = set(profile.dtypes or ())
        check_ints = any(not _floating(d) for d in allowed)

        def bad(t: TensorInfo) -> bool:
            return (t.floating or check_ints) and t.dtype not in allowed

        for node in graph.nodes:
            if not node.compute:
                continue
            outs = [t for t in node.outputs if bad(t)]
            ins = list({describe(t): t for _, t in node.inputs if bad(t)}.values())
            if not outs and not ins:
                continue
            parts = []
            if ins:
                parts.append("reads " + ", ".join(describe(t) for t in ins))
            if outs:
                parts.append("produces " + ", ".join(describe(t) for t in outs))
            yield Finding(
                self.name,
                f"{node.op} {' and '.join(parts)} (allowed: {', '.join(sorted(allowed))})",
                node,
                (outs or ins)[0],
            )


def _floating(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat", "complex"))


DTYPE = DtypeConstraint()
