"""A float that changes between calls of one frame: Dynamo's second compile of helper makes it dynamic,
and the tensorify pass restarts the trace (TensorifyScalarRestartAnalysis), not a failure."""
import torch


def helper(x, s):
    y = x.pow(s)
    torch._dynamo.graph_break()
    return y + 1


class M(torch.nn.Module):
    def forward(self, x):
        return helper(x, 2.5) + helper(x, 3.5)


model = M()
example_inputs = (torch.rand(4) + 0.5,)
