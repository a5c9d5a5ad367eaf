"""A 2-process DDP training script on the CPU (gloo), run with torchrun --nproc-per-node 2: DDP around a
compiled module, then torch.compile around DDP (Dynamo's DDPOptimizer splits that graph per DDP bucket)."""

import torch
import torch.distributed as dist


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(512, 512)  # 1 MiB of weight each: DDP's first bucket holds 1 MiB
        self.b = torch.nn.Linear(512, 512)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
inner = torch.nn.parallel.DistributedDataParallel(torch.compile(net, backend="eager"))
outer = torch.compile(torch.nn.parallel.DistributedDataParallel(Net(), bucket_cap_mb=1), backend="eager")
for model, width in ((inner, 8), (outer, 512)):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = model(torch.randn(4, width) + rank).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
