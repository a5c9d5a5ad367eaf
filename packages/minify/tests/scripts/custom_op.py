"""A compiler that fails on a custom op the script registers (planted; the real case: pytorch#186807, a
mutating custom op inside @nested_compile_region that 2.11's functionalization fails on). The graph capture
keeps calls torch.ops.planted.twice, which only this script registers: its model file does not run here, so
minify cannot judge the graph; the script's own failure is what is left to reduce."""

import torch


@torch.library.custom_op("planted::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _twice_fake(x):
    return torch.empty_like(x)


def refuses_custom_ops(gm, example_inputs):
    if any(str(n.target).startswith("planted.") for n in gm.graph.nodes):
        raise RuntimeError("planted: a custom op in the graph")
    return gm.forward


def f(x):
    return twice(x).sin()


if __name__ == "__main__":
    print(torch.compile(f, backend=refuses_custom_ops)(torch.randn(8)))
