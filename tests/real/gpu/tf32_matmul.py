"""A model file that turns TF32 on for its matmuls on purpose, as training scripts do."""
import torch

torch.backends.cuda.matmul.allow_tf32 = True
torch.set_float32_matmul_precision("high")


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(1024, 2048)
        self.fc2 = torch.nn.Linear(2048, 256)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))  # line 16


model = Mlp().eval()
example_inputs = (torch.randn(64, 1024),)
