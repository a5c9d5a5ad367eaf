"""A training script on CUDA under Triton's planted relu bug (Inductor's own test switch: its Triton relu
computes the wrong value): what device_triage.sh runs `pt2kit triage` on."""

import torch

torch._inductor.config.triton.inject_relu_bug_TESTING_ONLY = "accuracy"
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).cuda()
model = torch.compile(net)
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
for _ in range(3):
    x, y = torch.randn(32, 64, device="cuda"), torch.randint(0, 8, (32,), device="cuda")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
