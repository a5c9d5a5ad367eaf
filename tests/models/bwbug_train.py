"""A plain training loop compiled with its own aot_autograd backend (bwbug_backend.backend), whose
backward compiler is wrong: the loss still goes down, the gradients are wrong (tests/test_e2e_bwcomp.py)."""
import torch
from bwbug_backend import backend

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = torch.compile(model, backend=backend)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for i in range(3):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(step(x), y)
    loss.backward()
    opt.step()
    print(f"step {i}: loss {loss.item():.4f}")
