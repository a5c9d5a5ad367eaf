"""Models that pick their own float32 precision, as a user's file may: TF32 for matmuls (on a CPU,
oneDNN's TF32 setting; the numbers here do not change), and a model that draws random numbers."""
import torch

torch.set_float32_matmul_precision("high")
torch.backends.cuda.matmul.allow_tf32 = True


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.ModuleList([torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)])

    def forward(self, x):
        first, last = self.layers
        return last(torch.relu(first(x)))  # line 17


def mlp():
    return Mlp(), (torch.randn(4, 16, generator=torch.Generator().manual_seed(1)),)


def noisy():
    # Inductor draws its own random numbers unless fallback_random: the compiled side differs from eager
    return (lambda x: x + torch.rand_like(x)), (torch.randn(64, generator=torch.Generator().manual_seed(1)),)
