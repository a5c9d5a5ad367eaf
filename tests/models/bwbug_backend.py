"""A user's aot_autograd backend whose backward compiler plants a bug (relu's gradient, threshold_backward,
given the wrong threshold: 0.5 for 0, so gradients of outputs between 0 and 0.5 are dropped) and whose
forward compiler runs the graph as it is: the forward is bit-identical, gradients are wrong
(tests/test_e2e_bwcomp.py)."""
import torch
from torch._dynamo.backends.common import aot_autograd


def eager_passthrough(gm, example_inputs):
    return gm.forward


def planted_wrong_threshold_backward(gm, example_inputs):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target == torch.ops.aten.threshold_backward.default:
            node.args = (*node.args[:2], 0.5)
    gm.recompile()
    return gm.forward


backend = aot_autograd(fw_compiler=eager_passthrough, bw_compiler=planted_wrong_threshold_backward)
