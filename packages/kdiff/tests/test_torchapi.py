"""Each private or moving torch API kdiff uses (pt2kit.kdiff.torchapi), on the installed torch."""

from __future__ import annotations

import torch

from pt2kit.kdiff import torchapi
from pt2kit.runtime.worker.hops import HopAwareMode


def test_original_module_unwraps_torch_compile_and_keeps_anything_else():
    m = torch.nn.Linear(2, 2)
    compiled = torch.compile(m, backend="eager")
    assert compiled is not m and torchapi.original_module(compiled) is m
    assert torchapi.original_module(m) is m

    def f(x):
        return x

    assert torchapi.original_module(f) is f


def test_overload_name_of_the_ops_a_dispatch_mode_sees():
    seen: list[tuple[str, str]] = []

    class Names(HopAwareMode):  # what kdiff's near-tie watch is
        def watch(self, func, args, kwargs):
            seen.append((func.overloadpacket.__name__, torchapi.overload_name(func)))
            return func(*args, **kwargs)

    x = torch.tensor([[3.0, 1.0], [2.0, 4.0]])
    with Names():
        x.max(dim=1)
        x.max()
        x.topk(1)
    assert seen == [("max", "dim"), ("max", "default"), ("topk", "default")]
    assert torchapi.overload_name(torch.ops.aten.sort.default) == "default"
