"""A mixed-precision training loop as users write one: each compiled model is called inside `torch.autocast`,
its loss's backward taken outside it (tests/test_e2e_autocast.py). `healthy` trains under bfloat16 autocast;
`planted`, compiled with Inductor's planted relu accuracy bug (`options=`), under float16 autocast nested in
a bfloat16 one (the inner wins), a GradScaler scaling its loss as float16 training does."""

import torch


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(16, 32)
        self.down = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


torch.manual_seed(0)
healthy, planted = Block(), Block()
opt = torch.optim.SGD([*healthy.parameters(), *planted.parameters()], lr=0.01)
scaler = torch.amp.GradScaler("cpu")
run_healthy = torch.compile(healthy)
run_planted = torch.compile(planted, options={"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"})
x = torch.randn(4, 16)
for _ in range(2):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = run_healthy(x).float().pow(2).mean()
    loss.backward()
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.autocast("cpu", dtype=torch.float16):
        loss = run_planted(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
print("trained")
