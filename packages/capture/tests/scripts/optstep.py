"""A training loop whose optimizer step is compiled (Adam, foreach=False: Dynamo writes its addcmul_ as
torch.ops.prims.fma), and a function calling an op this script registers with torch.library itself."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-2, foreach=False)


@torch.compile(backend="aot_eager")
def step():
    opt.step()
    return model[0].weight * 1


for _ in range(2):
    model(torch.randn(4, 8)).pow(2).sum().backward()
    step()
    opt.zero_grad()


@torch.library.custom_op("pt2kit_optstep::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x):
    return torch.empty_like(x)


@torch.compile(backend="eager")
def scaled(x):
    return twice(x) + 1


print(scaled(torch.ones(3)).tolist())
