"""What a constraint is: a name, the phases it reads, and a check over a :class:`GraphView`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from pt2kit.schema import Profile

from ..graphview import GraphView, NodeInfo, TensorInfo

ATEN_PHASES = frozenset({"forward", "backward"})


@dataclass
class Finding:
    constraint: str
    message: str
    node: NodeInfo
    tensor: TensorInfo | None = None
    op: str | None = None  # when the op to name is not the node's own target


class Constraint:
    """Base class. Subclasses document what they check, why hardware cares, and an example."""

    name: ClassVar[str]
    phases: ClassVar[frozenset[str]] = ATEN_PHASES

    def enabled(self, profile: Profile) -> bool:
        raise NotImplementedError

    def check(self, graph: GraphView, profile: Profile) -> Iterator[Finding]:
        raise NotImplementedError


def materialised(graph: GraphView) -> Iterator[tuple[NodeInfo, TensorInfo]]:
    """Tensors that exist in memory: forward graph inputs and compute outputs, never views.

    A backward graph's inputs are forward tensors and output gradients, counted where made.
    """
    for node in graph.nodes:
        if node.compute or (node.kind == "placeholder" and graph.phase != "backward"):
            for t in node.outputs:
                yield node, t


def describe(t: TensorInfo) -> str:
    return f"{t.dtype}{list(t.shape)}"


def node_label(node: NodeInfo) -> str:
    if node.kind == "placeholder":
        return f"input {node.label or node.name}"
    return node.op or node.name
