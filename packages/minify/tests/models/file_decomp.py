"""A model file whose top level puts a wrong decomposition of aten.silu into Inductor's decomposition table, as
a library shipping its own decompositions does on import (test_file_code.py)."""

import torch
import torch._inductor.decomposition

aten = torch.ops.aten


def wrong_silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(2 * x)  # silu is x * sigmoid(x)


torch._inductor.decomposition.decompositions[aten.silu.default] = wrong_silu


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.silu(self.fc1(x)))


torch.manual_seed(0)
model = Net().eval()
example_inputs = (torch.randn(4, 16),)
