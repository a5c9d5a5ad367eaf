"""A user's script, as written: a compiled module, a loop; MODE (argv[1]) ok | segv | nothing."""

import os
import signal
import sys

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2


mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
torch.manual_seed(0)
net = Net()
step = torch.compile(net, backend=os.environ.get("BACKEND", "eager"))
if mode == "nothing":
    print("eager only:", net(torch.ones(2, 8)).sum().item())
    sys.exit(0)
for i, batch in enumerate((2, 3)):
    out = step(torch.randn(batch, 8))  # batch 3 recompiles: a second graph
    print(f"step {i}: {out.sum().item():.4f}", flush=True)
    if mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
