"""The issue's net: three residual blocks of LayerNorm, Linear 32->64, GELU, Linear 64->32, tanh, then
relu, sigmoid times the row mean, a Linear head and softmax; batch 8."""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(32)
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 32)

    def forward(self, x):
        return x + torch.tanh(self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x)))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block(), Block())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = self.blocks(x)
        x = torch.relu(x)
        x = torch.sigmoid(x) * x.mean(dim=1, keepdim=True)
        return torch.softmax(self.head(x), dim=-1)


def make():
    torch.manual_seed(0)
    return Net(), (torch.randn(8, 32),)
