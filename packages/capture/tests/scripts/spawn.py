"""mp.spawn DDP as users write it: the workers learn their rank from init_process_group, not RANK."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29547")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    f = torch.compile(lambda x: torch.relu(x) * 2, backend="eager")
    print(rank, f(torch.ones(2)).tolist())
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, nprocs=2)
