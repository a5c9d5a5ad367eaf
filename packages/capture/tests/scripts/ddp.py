"""A 2-process DDP training script on the CPU (gloo), run with torchrun --nproc-per-node 2."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
model = torch.nn.parallel.DistributedDataParallel(torch.compile(net, backend="eager"))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(4, 8) + rank).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
