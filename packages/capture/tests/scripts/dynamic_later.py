"""A script whose graph turns dynamic and then fails at a later call: Dynamo compiles the MLP for a batch of 2,
recompiles it with a symbolic batch at 4 (automatic dynamic: the default), and the script's backend's
compiled code raises on the batch of 6 the third step gives it (``python dynamic_later.py``; with ``dynamic``
as its argument, ``torch.compile(dynamic=True)``: one graph from the start)."""
import sys

import torch


def picky(gm, example_inputs):
    def run(*args):
        batch = [a.shape[0] for a in args if isinstance(a, torch.Tensor) and not isinstance(a, torch.nn.Parameter)
                 and a.dim() == 2 and a.shape[1] == 8 and a.shape[0] != 16]  # the batch, not the weight
        if batch and batch[0] >= 6:
            raise RuntimeError(f"picky kernel: batch {batch[0]}")
        return gm(*args)
    return run


if __name__ == "__main__":
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.SiLU(), torch.nn.Linear(16, 2))
    step = torch.compile(net, backend=picky, dynamic=True if sys.argv[1:] == ["dynamic"] else None)
    with torch.no_grad():
        for batch in (2, 4, 6):
            print("batch", batch, tuple(step(torch.randn(batch, 8)).shape))
