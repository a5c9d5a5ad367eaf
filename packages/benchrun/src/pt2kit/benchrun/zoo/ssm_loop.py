"""A 4-layer Mamba-style selective SSM, its scan a Python loop over time (plain torch): batch 8, sequence 64, width 256."""

import torch
import torch.nn.functional as F
from torch import nn


class SelectiveSSM(nn.Module):
    def __init__(self, d: int = 256, n: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.in_proj = nn.Linear(d, 2 * d)
        self.dt_proj = nn.Linear(d, d)
        self.b_proj = nn.Linear(d, n)
        self.c_proj = nn.Linear(d, n)
        self.a_log = nn.Parameter(torch.log(torch.arange(1, n + 1, dtype=torch.float32)).repeat(d, 1))
        self.out_proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u, z = self.in_proj(self.norm(x)).chunk(2, dim=-1)
        u = F.silu(u)
        dt = F.softplus(self.dt_proj(u))  # (b, L, d)
        a = -torch.exp(self.a_log)  # (d, n)
        b, c = self.b_proj(u), self.c_proj(u)  # (b, L, n)
        h = x.new_zeros(x.shape[0], x.shape[2], a.shape[1])
        ys = []
        for t in range(x.shape[1]):
            h = torch.exp(dt[:, t, :, None] * a) * h + dt[:, t, :, None] * b[:, t, None, :] * u[:, t, :, None]
            ys.append((h * c[:, t, None, :]).sum(-1))
        return x + self.out_proj(torch.stack(ys, dim=1) * F.silu(z))


class SSMStack(nn.Module):
    def __init__(self, layers: int = 4, d: int = 256) -> None:
        super().__init__()
        self.layers = nn.ModuleList(SelectiveSSM(d) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


torch.manual_seed(0)
torch.set_float32_matmul_precision("high")  # TF32 matmuls on CUDA, as performance work runs them
model = SSMStack().eval()
example_inputs = (torch.randn(8, 64, 256),)
