"""align: the dimensions hardware tiles are multiples of its tile size.

Why: systolic arrays and vector units work on fixed tiles (8, 16, 32, 128 elements); a dimension
that does not fill whole tiles is padded, masked or refused. What they tile are activations: the
data inputs of each forward graph and the outputs of compute ops, which hold every GEMM's M, N and
K and every convolution's channels. With ``align_scope = "tiled"`` (the default) parameters,
buffers and constants are not checked as tensors of their own (their tiled dimensions show up in
the activations of the ops that use them), nor is a convolution's weight gradient (its 3x3 spatial
dims are no tile); ``align_scope = "all"`` checks every dimension of every materialised tensor.
Dimensions smaller than ``align_min_size`` (default 2: size-1 dimensions, broadcasting) are
exempt. Views materialise nothing; a backward graph's inputs are forward tensors and output
gradients, checked where they were made. A symbolic dimension (dynamic shapes) cannot be
verified: that is a finding of its own, which says what the example size would give.

Example: ``align = 16`` and a batch of 10 gives ``dim 0 of size 10 is not a multiple of 16`` on
``aten.addmm.default`` at the line that calls the layer.
"""

from __future__ import annotations

from collections.abc import Iterator

from pt2kit.schema import Profile

from ..graphview import GraphView, NodeInfo, TensorInfo
from .base import Constraint, Finding, describe, materialised, node_label


class AlignConstraint(Constraint):
    name = "align"

    def enabled(self, profile: Profile) -> bool:
        return bool(profile.align and profile.align > 1)

    def check(self, graph: GraphView, profile: Profile) -> Iterator[Finding]:
        n = int(profile.align or 1)
        tiled = profile.align_scope != "all"
        for node, t in materialised(graph):
            if tiled and (node.param or _weight_grad(node, t)):
                continue
            wrong, unknown = [], []
            for i, (size, hint) in enumerate(zip(t.shape, t.hints, strict=True)):
                if isinstance(size, int):
                    if size >= profile.align_min_size and size % n:
                        wrong.append(f"dim {i} of size {size}")
                else:
                    example = (
                        f"its example size {hint} {'is' if hint % n == 0 else 'is not'} a multiple"
                        if hint is not None
                        else "no example size is known"
                    )
                    unknown.append(f"dim {i} is symbolic ({size}), so alignment to {n} cannot be verified; {example}")
            if wrong:
                yield Finding(
                    self.name,
                    f"{node_label(node)}: {', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} not a multiple "
                    f"of {n} ({describe(t)})",
                    node,
                    t,
                )
            for msg in unknown:
                yield Finding(self.name, f"{node_label(node)}: {msg} ({describe(t)})", node, t)


def _weight_grad(node: NodeInfo, t: TensorInfo) -> bool:
    """A convolution_backward output shaped like its weight (args: grad_output, input, weight, ...)."""
    return node.packet == "aten.convolution_backward" and len(node.inputs) > 2 and t.shape == node.inputs[2][1].shape


ALIGN = AlignConstraint()
