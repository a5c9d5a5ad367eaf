"""Test-only torch.compile backends: Inductor with the decomposition of one backward-only op planted
wrong, so the compiled forward stays right and one gradient goes wrong (the op appears only in the
backward graph AOTAutograd makes, so the bug can be nowhere else)."""
import torch
import torch._functorch.config
from torch._inductor.compile_fx import compile_fx
from torch._inductor.decomposition import select_decomp_table

aten = torch.ops.aten


def _threshold_backward(grad_output, self, threshold):
    return torch.where(self >= threshold, grad_output, 0)  # >= for >: ReLU's gradient let through at 0


def _layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
    good = select_decomp_table()[aten.native_layer_norm_backward.default](
        grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
    root = torch.sqrt(input)  # NaN wherever the input is not positive (0/0 at 0)
    return (good[0] * root / root, *good[1:])


def _planted(op, wrong):
    def backend(gm, example_inputs):
        # the compile caches' keys leave decompositions out: a cached healthy compile would hide the bug
        with torch._functorch.config.patch(enable_autograd_cache=False):
            return compile_fx(gm, example_inputs, decompositions={**select_decomp_table(), op: wrong},
                              config_patches={"fx_graph_cache": False})

    return backend


relu_grad = _planted(aten.threshold_backward.default, _threshold_backward)
layer_norm_grad_nan = _planted(aten.native_layer_norm_backward.default, _layer_norm_backward)
