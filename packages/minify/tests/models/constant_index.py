"""A failure that needs a constant the graph holds (issue 57, class 2): ``y[[0, 0]]`` makes the index list a
tensor constant of the aten graphs (``_tensor_constant0``), and its gradient an ``index_put(..., accumulate=True)``
by it. ``backend``, an aot_autograd backend (min-cut partitioner, as Inductor's), has a backward compiler with
a planted bug: an accumulating index_put whose indices are constants of the graph loses its accumulate, as a
pass that takes a constant index list for one without repeats would; row 0's gradient counts once, not twice.
Fed in as an input, the index is no constant and the pass leaves it alone."""
import torch
from functorch.compile import min_cut_rematerialization_partition
from torch._dynamo.backends.common import aot_autograd

aten = torch.ops.aten


class Rows(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 3))

    def forward(self, x):
        return torch.tanh(x @ self.w.t())[[0, 0]] * 2


def _is_constant(node):
    while node is not None and node.op == "call_function" and node.target is aten.lift_fresh_copy.default:
        node = node.args[0]
    return node is not None and node.op == "get_attr"


def as_is(gm, example_inputs):
    return gm.forward


def constant_indices_never_repeat(gm, example_inputs):
    for node in gm.graph.nodes:
        if (node.op == "call_function" and node.target is aten.index_put.default and len(node.args) > 3
                and node.args[3] and all(_is_constant(i) for i in node.args[1])):
            node.args = (*node.args[:3], False)
    gm.recompile()
    return gm.forward


backend = aot_autograd(fw_compiler=as_is, bw_compiler=constant_indices_never_repeat,
                       partition_fn=min_cut_rematerialization_partition)

torch.manual_seed(0)
model = Rows()
example_inputs = (torch.randn(4, 3),)
