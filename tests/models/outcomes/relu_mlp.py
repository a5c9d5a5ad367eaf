"""pass, and with a TESTING_ONLY backend a failed diff or a compiler crash (they act on torch.relu)."""
import torch


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


torch.manual_seed(0)
model = Mlp()
example_inputs = (torch.randn(4, 8),)
