"""A user's script: data setup, a helper, a model, and one torch.compile(fullgraph=True) that Dynamo
refuses (print of a tensor's shape is a graph break), before any graph reaches a backend."""
import json

import torch

CONFIG = {"width": 8, "depth": 2, "seed": 0}


def make_data(n, width):
    g = torch.Generator().manual_seed(CONFIG["seed"])
    xs = torch.randn(n, width, generator=g)
    return xs, xs.sum(dim=1, keepdim=True)


class Net(torch.nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))
        self.head = torch.nn.Linear(width, 1)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        print("activations", x.shape)
        return self.head(x)


xs, ys = make_data(16, CONFIG["width"])
net = Net(CONFIG["width"], CONFIG["depth"])
summary = json.dumps({name: tuple(p.shape) for name, p in net.named_parameters()})
step = torch.compile(net, fullgraph=True)
loss = torch.nn.functional.mse_loss(step(xs), ys)
print(summary, loss.item())
