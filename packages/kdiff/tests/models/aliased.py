"""A graph that writes into one input and reads another that shares its storage (f(a, a[1])): each side
of a diff must start from the values the script handed the graph, the two inputs still one storage."""
import torch


class M(torch.nn.Module):
    def forward(self, a, b):
        a.add_(1)
        return b * 2


model = M()
a = torch.zeros(4, 4)
example_inputs = (a, a[1])
