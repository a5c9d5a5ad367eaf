"""A forward that writes its input and a buffer in place before using them: a run that starts from
the buffer a run before it halved computes from other values (kdiff's sides must each start from the
file's values: the inputs are copied per side, the buffer is written back)."""
import torch


class Halve(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.register_buffer("scale", torch.full((4,), 2.0))

    def forward(self, x):
        x.mul_(0.5)
        self.scale.mul_(0.5)
        return self.fc(x) * self.scale


torch.manual_seed(0)
model = Halve()
example_inputs = (torch.randn(3, 8),)
