"""Planted: a wrong decomposition of one op (aten.silu) installed into Inductor's decomposition table,
as a library that ships its own decompositions installs them; an inference script.

The culprit PyTorch's compiler_bisector names: backend aot_eager_decomp_partition, subsystem decomposition,
the application that decomposes aten.silu.default. The table is global state of this process, not a
setting: `pt2kit capture` records it as code (where it lives, FILE.py:NAME) and no stream hands it over;
`inductor_with_wrong_silu` below is the same decomposition as a backend, what `--backend
wrong_decomp.py:inductor_with_wrong_silu` hands a tool. The script reads TORCH_COMPILE_BACKEND only as
PyTorch's bisector documents (its `run` mode sets it); left unset, it compiles with Inductor. Exit 0 when
the compiled model matches eager, 1 when it does not.
"""

import os
import sys

import torch
import torch._inductor.decomposition

aten = torch.ops.aten


def wrong_silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(2 * x)  # silu is x * sigmoid(x)


def install() -> None:
    torch._inductor.decomposition.decompositions[aten.silu.default] = wrong_silu


def inductor_with_wrong_silu(gm: torch.fx.GraphModule, example_inputs: list) -> object:
    """Inductor with the decomposition installed: the planted fault as a backend a tool can be handed."""
    from torch._inductor.compile_fx import compile_fx

    install()
    return compile_fx(gm, example_inputs)


install()
BACKEND = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.silu(self.fc1(x)))


def main() -> int:
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(4, 16)
    with torch.no_grad():
        expected = model(x)
        got = torch.compile(model, backend=BACKEND)(x)
    ok = torch.allclose(got, expected, rtol=1e-4, atol=1e-4)
    print(f"wrong_decomp ({BACKEND}): {'match' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
