"""One test per private torch API wrapper: when torch moves one, this file says which."""

from __future__ import annotations

import torch

from pt2kit.fxcheck import inductor_code, torchapi


def _dynamo_graph(fn, *args):
    torch._dynamo.reset()
    got = []

    def be(gm, ex):
        got.append((gm, ex))
        return gm.forward

    torch.compile(fn, backend=be)(*args)
    return got[0]


def test_pre_functional_graph_keeps_inplace_ops_and_stack_traces():
    gm, ex = _dynamo_graph(lambda x: torch.relu_(x * 2), torch.randn(4))
    pre = torchapi.pre_functional_graph(gm, ex)
    ops = [n for n in pre.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.relu_.default in [n.target for n in ops]
    assert all("test_torchapi.py" in n.meta.get("stack_trace", "") for n in ops)


def test_aot_capture_gives_forward_and_backward_graphs():
    gm, ex = _dynamo_graph(lambda x: (x.sin() * 2).sum(), torch.randn(4, requires_grad=True))
    seen = {}

    def fw(g, e):
        seen["fw"] = g
        return torchapi.boxed(g.forward)

    torchapi.aot_capture(gm, ex, fw, lambda joint, bw: seen.setdefault("bw", bw))
    assert torch.ops.aten.sin.default in [n.target for n in seen["fw"].graph.nodes]
    assert torch.ops.aten.cos.default in [n.target for n in seen["bw"].graph.nodes]


def test_output_code_and_inductor_compile():
    gm, ex = _dynamo_graph(lambda x: x.relu() + 1, torch.randn(8))
    with torchapi.output_code() as codes:
        torchapi.inductor_compile(gm, ex)
    assert len(codes) == 1
    (k,) = inductor_code.kernels(codes[0])
    assert k.name.startswith("cpp_fused") and k.kind == "cpp_pybinding" and "kernel(" in k.source


def test_op_predicates_and_names():
    assert torchapi.is_view(torch.ops.aten.t.default) and not torchapi.is_view(torch.ops.aten.add.Tensor)
    assert torchapi.is_mutable(torch.ops.aten.relu_.default) and not torchapi.is_mutable(torch.ops.aten.relu.default)
    assert torchapi.is_composite_implicit("aten::linalg_lu_factor") and not torchapi.is_composite_implicit("aten::relu")
    assert torchapi.qualified_name(torch.relu) == "torch.relu"
    assert torchapi.static_int(5) == 5


def test_op_kinds():
    assert torchapi.is_op_overload(torch.ops.aten.add.Tensor) and not torchapi.is_op_overload(torch.relu)
    assert not torchapi.is_op_overload(torch.ops.higher_order.cond)
    assert torchapi.is_higher_order(torch.ops.higher_order.cond) and not torchapi.is_higher_order(torch.ops.aten.add.Tensor)


def test_aot_input_descriptor_or_none():
    class N:
        def __init__(self):
            self.meta = {}

    assert torchapi.aot_input(N()) == (None, False)


def test_kernel_parser_reads_triton_definitions():
    wrapper = ("triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''\n"
               "@triton.jit\ndef triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):\n"
               "    pass\n''', device_str='cuda')\n")
    (k,) = inductor_code.kernels(wrapper)
    assert (k.name, k.kind) == ("triton_poi_fused_add_0", "triton") and "@triton.jit" in k.source
    assert inductor_code.suffix("triton") == ".py"
