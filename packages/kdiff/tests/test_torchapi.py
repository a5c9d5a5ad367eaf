"""Each private or moving torch API kdiff uses (pt2kit.kdiff.torchapi), on the installed torch."""

from __future__ import annotations

import torch

from pt2kit.kdiff import torchapi
from pt2kit.runtime.hops import HopAwareMode


def test_reset_dynamo_makes_the_next_call_compile_again():
    graphs: list[int] = []

    def backend(gm, example_inputs):
        graphs.append(len(gm.graph.nodes))
        return gm.forward

    f = torch.compile(lambda x: x.sin() + 1, backend=backend)
    torchapi.reset_dynamo()
    x = torch.randn(3)
    f(x)
    f(x)
    assert len(graphs) == 1  # the second call ran the cached frame
    torchapi.reset_dynamo()
    assert torch.equal(f(x), x.sin() + 1)
    assert len(graphs) == 2 and graphs[0] == graphs[1]
    torchapi.reset_dynamo()


def test_tree_map_reaches_every_leaf_and_keeps_the_containers():
    t = torch.ones(2)
    out = torchapi.tree_map(lambda v: v * 2, {"a": [1, (t, 3)], "b": "s"})
    assert list(out) == ["a", "b"] and out["b"] == "ss"
    assert out["a"][0] == 2 and isinstance(out["a"][1], tuple) and out["a"][1][1] == 6
    assert out["a"][1][0].tolist() == [2.0, 2.0] and t.tolist() == [1.0, 1.0]


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
