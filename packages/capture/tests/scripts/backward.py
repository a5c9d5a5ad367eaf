"""A user's training script whose compiled backward fails (issue 44): ``python backward.py KIND``, three
training steps of a small ReLU MLP compiled with one of the script's own ``aot_autograd`` backends, whose
code fails on a graph holding relu (its backward: ``threshold_backward``). KIND:

- ``raise`` (backend ``raising``): the backward's code raises ``OverflowError`` once its inputs grow past 5
  (the batch is scaled by 100 from step 2 on): at step 2;
- ``segv`` (``segv_backward``): the backward's code kills the process with SIGSEGV (a kernel reading
  address 0), at step 1;
- ``fw-segv`` (``segv_forward``): the forward's code does that, at step 1;
- ``compile-segv`` (``segv_compile``): the forward compiler itself does that while it compiles the graph (no
  code returned yet);
- ``later-segv`` (``segv_later``): the forward's code does that once its inputs grow past 5: at step 2;
- ``nan`` (``nan_backward``): the backward's code returns NaN gradients once its inputs grow past 5 (step 2,
  no error: only ``--check nan`` sees it; the loss stays finite).
"""
import ctypes
import sys

import torch
from torch._dynamo.backends.common import aot_autograd


def compiler(op, what):
    def compile(gm, example_inputs):
        if not any(n.target == op for n in gm.graph.nodes):
            return gm
        if what == "compile-segv":
            ctypes.string_at(0)  # the compiler's own bad read

        def run(*args):
            if what == "segv":
                ctypes.string_at(0)  # SIGSEGV, as a kernel's bad read
            grown = max(float(a.abs().max()) for a in args if isinstance(a, torch.Tensor) and a.numel()) > 5
            if grown and what == "later-segv":
                ctypes.string_at(0)
            if grown and what == "raise":
                raise OverflowError("backward kernel overflow")
            out = gm(*args)
            if grown and what == "nan":  # an overflowing kernel's gradients
                return [o * float("nan") if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in out]
            return out
        return run
    return compile


def passthrough(gm, example_inputs):
    return gm


relu, relu_bw = torch.ops.aten.relu.default, torch.ops.aten.threshold_backward.default
raising = aot_autograd(fw_compiler=passthrough, bw_compiler=compiler(relu_bw, "raise"))
segv_backward = aot_autograd(fw_compiler=passthrough, bw_compiler=compiler(relu_bw, "segv"))
nan_backward = aot_autograd(fw_compiler=passthrough, bw_compiler=compiler(relu_bw, "nan"))
segv_forward = aot_autograd(fw_compiler=compiler(relu, "segv"), bw_compiler=passthrough)
segv_compile = aot_autograd(fw_compiler=compiler(relu, "compile-segv"), bw_compiler=passthrough)
segv_later = aot_autograd(fw_compiler=compiler(relu, "later-segv"), bw_compiler=passthrough)

if __name__ == "__main__":
    backend = {"raise": raising, "segv": segv_backward, "fw-segv": segv_forward, "nan": nan_backward,
               "compile-segv": segv_compile, "later-segv": segv_later}[sys.argv[1]]
    # seeded before the model: its weights decide whether relu's output alone grows past 5 at step 2 (under
    # random weights it stayed below about one run in ten, and the minimal failing backward then kept the mm
    # whose input is the batch); scaled by 100 it is about 40 here, far from the edge
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step = torch.compile(model, backend=backend)
    for i in range(1, 4):
        x = torch.rand(4, 8) * (100 if i >= 2 else 0.1)
        loss = step(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        print("step", i, float(loss))
