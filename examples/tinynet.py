"""A small convnet with the habits that trip accelerators up: a float64 head, an odd batch,
an in-place ReLU and a transposed operand. The demo runs fxcheck on it:

    fxcheck examples/tinynet.py --profile npu-bf16
"""

import torch


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.act = torch.nn.ReLU(inplace=True)
        self.proj = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 10).double()

    def forward(self, x):
        y = self.act(self.stem(x))
        y = y.mean(dim=(2, 3))
        y = self.proj(y) + self.proj.weight.t()[0]
        mix = y.t() @ y  # a transposed operand feeds a matmul: fine
        scale = (y.t() + 1).mean()  # a transposed operand feeds an add: not on dense-only hardware
        return self.head(y.double()) * scale, mix


torch.manual_seed(0)  # the same weights and inputs every run: the same page every run
model = TinyNet()
example_inputs = (torch.randn(12, 3, 16, 16),)
