"""A HiFi-GAN-style upsampling conv stack with legacy torch.nn.utils.weight_norm (still in many vocoder
checkpoints): each conv's `weight` is a plain attribute its pre-forward hook recomputes from weight_g and
weight_v, a non-leaf tensor after a step with grad, which torch refuses to deepcopy."""
import warnings

import torch
from torch.nn.utils import weight_norm

warnings.filterwarnings("ignore", category=FutureWarning)  # legacy weight_norm is deprecated: that is the point


class Upsampler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = weight_norm(torch.nn.Conv1d(4, 8, 3, padding=1))
        self.up = weight_norm(torch.nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1))

    def forward(self, x):
        return torch.tanh(self.up(torch.nn.functional.leaky_relu(self.pre(x), 0.1)))


torch.manual_seed(0)
model = Upsampler()
example_inputs = (torch.randn(2, 4, 16),)
