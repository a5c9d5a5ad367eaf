"""deny: ops the hardware cannot run at all.

Why: a bring-up compiler lowers a known set of ops; anything else must fall back or fail. Entries
are aten overloads (``aten.convolution.default``) or whole op packets (``aten.convolution``);
``aten::relu_`` and a bare ``relu_`` are accepted too. Matched where each op really appears:

* the functional aten graphs (forward, backward), where ``nn.Conv2d`` is ``aten.convolution``;
* the aten graph before functionalization, for in-place ops it removes (``ReLU(inplace=True)`` is
  ``aten.relu_`` there, ``aten.relu`` after);
* the Dynamo graph, for composite ops that decompose before AOTAutograd sees them
  (``torch.linalg.lu_factor`` becomes ``aten.linalg_lu_factor_ex``; a deny on
  ``aten.linalg_lu_factor`` still finds it).

Ops with tuple outputs are named like any other; the finding lists every output.

Example: ``deny = ["aten.convolution"]`` on a model with an ``nn.Conv2d`` gives
``aten.convolution.default is denied by the profile``, with the conv's module path and line.
"""

from __future__ import annotations

from collections.abc import Iterator

from pt2kit.schema import Profile

from ..graphview import GraphView, NodeInfo
from .base import Constraint, Finding, describe


def normalise(entry: str) -> str:
    entry = entry.strip().replace("::", ".")
    if entry.startswith("torch.ops."):
        entry = entry[len("torch.ops.") :]
    return entry if "." in entry else f"aten.{entry}"


class DenyConstraint(Constraint):
    name = "deny"
    phases = frozenset({"forward", "backward", "dynamo"})

    def enabled(self, profile: Profile) -> bool:
        return bool(profile.deny)

    def check(self, graph: GraphView, profile: Profile) -> Iterator[Finding]:
        deny = {normalise(d) for d in profile.deny}
        for node in graph.nodes:
            if node.kind != "call_function":
                continue
            name = self._candidate(graph, node)
            if name is None:
                continue
            packet = name if graph.phase == "dynamo" else node.packet
            if name in deny or packet in deny:
                outs = ", ".join(describe(t) for t in node.outputs)
                returns = f"; returns ({outs})" if len(node.outputs) > 1 else ""
                where = " (before functionalization)" if graph.pre_functional else ""
                yield Finding(
                    self.name,
                    f"{name} is denied by the profile{where}{returns}",
                    node,
                    node.outputs[0] if node.outputs else None,
                    op=name,
                )

    @staticmethod
    def _candidate(graph: GraphView, node: NodeInfo) -> str | None:
        if graph.phase == "dynamo":
            if not node.composite_implicit or not node.op:
                return None
            return "aten." + node.op.rsplit(".", 1)[-1]
        if graph.pre_functional:
            return node.op if node.aten and node.mutable else None
        return node.op if node.aten else None


DENY = DenyConstraint()
