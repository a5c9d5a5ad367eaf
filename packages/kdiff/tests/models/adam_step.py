"""A compiled optimizer step as `pt2kit capture` writes one: the parameters and Adam's state
(step, exp_avg, exp_avg_sq) are the module's own, the gradients its inputs, and the step returns
nothing: its whole effect is writing them in place (torch.optim.adam's single-tensor code, as
`torch.compile(opt.step)` with foreach=False runs it). ``buggy_lerp`` (below) is a test-only
backend: aot_eager with the decomposition of aten.lerp planted wrong, so one write, exp_avg's, is
wrong and nothing else is (a graph that returns no tensor: the bug is only in what it writes)."""
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.debugging import boxed_nop
from torch.optim.adam import adam

aten = torch.ops.aten


class AdamStep(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 4))
        for i, p in enumerate(self.net.parameters()):  # the state of one step taken already
            self.register_buffer(f"step_{i}", torch.tensor(1.0))
            self.register_buffer(f"exp_avg_{i}", torch.randn_like(p) * 0.01)
            self.register_buffer(f"exp_avg_sq_{i}", torch.rand_like(p) * 1e-4)

    def forward(self, *grads):
        n = len(grads)
        adam(list(self.net.parameters()), list(grads), [getattr(self, f"exp_avg_{i}") for i in range(n)],
             [getattr(self, f"exp_avg_sq_{i}") for i in range(n)], [], [getattr(self, f"step_{i}") for i in range(n)],
             foreach=False, capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
             has_complex=False, amsgrad=False, beta1=0.9, beta2=0.999, lr=1e-2, weight_decay=0.0, eps=1e-8,
             maximize=False)
        return ()  # as the captured graph of `torch.compile(opt.step)` does


torch.manual_seed(0)
model = AdamStep()
example_inputs = tuple(torch.randn_like(p) for p in model.net.parameters())


def _lerp(start, end, weight):
    return start + (weight * 2) * (end - start)  # twice the weight: exp_avg moves twice as far


buggy_lerp = aot_autograd(fw_compiler=boxed_nop,
                          decompositions={aten.lerp.Scalar: _lerp, aten.lerp_.Scalar: _lerp})
