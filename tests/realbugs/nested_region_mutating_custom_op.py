"""a mutating custom op inside @nested_compile_region fails functionalization

issue: https://github.com/pytorch/pytorch/issues/186807
fix: https://github.com/pytorch/pytorch/pull/180674
class: crash,hop
issue57: 6
stage: aot
op: invoke_subgraph
file: torch/_dynamo/variables/invoke_subgraph.py
changed: Dynamo inlines single-use invoke_subgraph regions, so the mutating custom op is auto-functionalized at top level; the failure is AOTAutograd's functionalization inside the region (2.13 with torch._dynamo.config.inline_single_use_invoke_subgraph=False fails the same under aot_eager, passes under eager)
"""

import torch


@torch.library.custom_op("repro::add_into", mutates_args=("d",))
def add_into(d: torch.Tensor, x: torch.Tensor) -> None:
    d.add_(x)


@add_into.register_fake
def _add_into_fake(d, x):
    return None


@torch.compiler.nested_compile_region
def nested_inner(d: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    torch.ops.repro.add_into(d, x)
    return d + 1.0


def with_nested(d: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return nested_inner(d, x)


x = torch.randn(4, 8)
d_eager = torch.zeros(4, 8)
want = with_nested(d_eager, x)
d_comp = torch.zeros(4, 8)
got = torch.compile(with_nested, fullgraph=True)(d_comp, x)
torch.testing.assert_close(got, want)
torch.testing.assert_close(d_comp, d_eager)
print("ok")
