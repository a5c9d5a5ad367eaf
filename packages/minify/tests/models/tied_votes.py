"""A failure that needs the inputs' real values: a backend whose argmax picks the last of tied maxima
(eager picks the first). The votes tie in every row, as counts and one-hot mixes do; seeded random
floats never tie, so only a repro that embeds the real votes shows the bug."""

import torch


class Vote(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, votes: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.proj(x))
        winner = torch.argmax(votes, dim=-1)
        return h * (winner.unsqueeze(-1).float() + 1.0)


def make():
    torch.manual_seed(0)
    votes = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25], [0.0, 1.0, 0.0, 1.0],
                          [2.0, 0.0, 2.0, 1.0]] * 2)
    return Vote().eval(), (votes, torch.randn(8, 16))


def _last_argmax(x, dim=None, keepdim=False):
    if dim is None:
        return x.numel() - 1 - x.flatten().flip(0).argmax()
    return x.size(dim) - 1 - x.flip(dim).argmax(dim, keepdim=keepdim)


def last_of_ties(gm, example_inputs):
    """The planted bug: every argmax of the graph Dynamo hands over picks the last of tied maxima."""
    for n in gm.graph.nodes:
        if (n.op == "call_function" and n.target is torch.argmax) or (n.op == "call_method" and n.target == "argmax"):
            n.op, n.target = "call_function", _last_argmax
    gm.recompile()
    return gm.forward
