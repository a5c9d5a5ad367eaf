"""A training script as users write one (no model file): argparse, a small MLP, AdamW, a few steps of
`torch.compile(model)`; under `torchrun` it trains with DDP over gloo. What the README's
`pt2kit capture -- python examples/train.py --lr 3e-4 | kdiff` starts from.

`--planted-bug` trains a ReLU net under Inductor's own planted accuracy bug (its C++ relu is wrong):
the failing script `pt2kit triage -- python examples/train.py --planted-bug` starts from."""

import argparse
import os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--planted-bug", action="store_true", help="ReLU, with Inductor's relu accuracy bug planted")
args = parser.parse_args()

torch.manual_seed(0)
if args.planted_bug:  # a compiler bug PyTorch plants for its own tests: Inductor's C++ relu computes the wrong value
    torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
act = torch.nn.ReLU() if args.planted_bug else torch.nn.GELU()
net = torch.nn.Sequential(torch.nn.Linear(16, 32), act, torch.nn.Linear(32, 4))
model = torch.compile(net)
if "WORLD_SIZE" in os.environ:  # torchrun
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(net.parameters(), lr=args.lr)
for _ in range(args.steps):
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"step {args.steps}: loss {loss.item():.4f}")
if "WORLD_SIZE" in os.environ:
    dist.destroy_process_group()
