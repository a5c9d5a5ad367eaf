"""A training script compiled with a backend torch registers, one of its TESTING_ONLY ones: it raises
ReluCompileError on any graph holding a relu (tests/test_e2e_backend.py)."""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2


step = torch.compile(Net(), backend="relu_compile_error_TESTING_ONLY")
print(step(torch.randn(4, 8)).sum().item())
