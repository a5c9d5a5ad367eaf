"""Each constraint on hand-made graph views: the semantics the peer gets wrong, pinned down."""

from __future__ import annotations

from pt2kit.fxcheck.checks import CONSTRAINTS, run_checks
from pt2kit.fxcheck.checks.deny import normalise
from pt2kit.fxcheck.graphview import GraphView, NodeInfo, TensorInfo
from pt2kit.schema import Profile


def t(shape, dtype="float32", contiguous=True, transposed=False, stride=None):
    n = 1
    for s in shape:
        n *= s if isinstance(s, int) else 1
    return TensorInfo(dtype=dtype, shape=list(shape), hints=[s if isinstance(s, int) else 12 for s in shape],
                      contiguous=contiguous, contiguous_transposed=transposed, stride=stride,
                      nbytes=n * 4 if all(isinstance(s, int) for s in shape) else None,
                      floating=dtype.startswith(("float", "bfloat")))


def op(name, outs, ins=(), view=False, mutable=False, packet=None):
    return NodeInfo(name=name.split(".")[1], kind="call_function", op=name, packet=packet or name.rsplit(".", 1)[0],
                    aten=True, view=view, mutable=mutable, outputs=list(outs), inputs=list(ins))


def g(*nodes, phase="forward", pre=False):
    return GraphView(phase=phase, index=0, nodes=list(nodes), pre_functional=pre)


def test_every_constraint_is_documented_with_what_why_and_example():
    import importlib

    for c in CONSTRAINTS:
        doc = importlib.import_module(type(c).__module__).__doc__
        assert doc and "Why:" in doc and "Example:" in doc, type(c).__module__
    assert len({c.name for c in CONSTRAINTS}) == len(CONSTRAINTS)


def test_alignment_ignores_size_one_dims_and_views():
    p = Profile(align=8)
    view = op("aten.view.default", [t([10, 8])], view=True)
    ok = op("aten.add.Tensor", [t([1, 8, 16])])
    bad = op("aten.mul.Tensor", [t([1, 12, 16])])
    found = run_checks(g(view, ok, bad), p)
    assert [f.message for f in found] == ["aten.mul.Tensor: dim 1 of size 12 is not a multiple of 8 (float32[1, 12, 16])"]
    assert run_checks(g(bad), Profile(align=8, align_min_size=13)) == []


def test_memory_counts_materialised_tensors_not_views():
    p = Profile(max_tensor_bytes=100)
    big_view = op("aten.expand.default", [t([100, 100])], view=True)
    big = op("aten.add.Tensor", [t([100])])
    found = run_checks(g(big_view, big), p)
    assert [f.node.op for f in found] == ["aten.add.Tensor"] and "400 bytes" in found[0].message


def test_contiguity_gemm_takes_transposed_operands_elementwise_does_not():
    p = Profile(contiguous=True)
    wt = t([16, 8], contiguous=False, transposed=True, stride=[1, 16])
    tr = op("aten.t.default", [wt], view=True)
    mm = op("aten.addmm.default", [t([4, 8])], ins=[("t", wt)])
    add = op("aten.add.Tensor", [t([16, 8])], ins=[("t", wt)])
    clone = op("aten.clone.default", [t([16, 8])], ins=[("t", wt)])
    found = run_checks(g(tr, mm, add, clone), p)
    assert [f.node.op for f in found] == ["aten.add.Tensor"]
    odd = t([4, 4, 4], contiguous=False, transposed=False, stride=[1, 16, 4])
    assert len(run_checks(g(op("aten.bmm.default", [t([4, 4, 4])], ins=[("p", odd)])), p)) == 1


def test_dtype_checks_ints_only_when_an_int_dtype_is_listed():
    idx = op("aten.argmax.default", [t([4], dtype="int64")], ins=[("x", t([4, 8]))])
    assert run_checks(g(idx), Profile(dtypes=["float32"])) == []
    assert len(run_checks(g(idx), Profile(dtypes=["float32", "int32"]))) == 1


def test_deny_matches_overloads_packets_and_only_inplace_ops_before_functionalization():
    relu_ = op("aten.relu_.default", [t([4])], mutable=True)
    add = op("aten.add.Tensor", [t([4])])
    p = Profile(deny=["relu_", "aten::add"])
    assert [f.node.op for f in run_checks(g(relu_, add, pre=True), p)] == ["aten.relu_.default"]
    assert [f.node.op for f in run_checks(g(add), p)] == ["aten.add.Tensor"]
    assert normalise("torch.ops.aten.convolution.default") == "aten.convolution.default"
    tup = op("aten.linalg_lu_factor_ex.default", [t([4, 4]), t([4], dtype="int32"), t([], dtype="int32")])
    (f,) = run_checks(g(tup), Profile(deny=["aten.linalg_lu_factor_ex"]))
    assert f.tensor.dtype == "float32" and "returns (float32[4, 4], int32[4], int32[])" in f.message


def test_dynamo_phase_only_for_composite_ops():
    lu = NodeInfo(name="lu", kind="call_function", op="torch._C._linalg.linalg_lu_factor", composite_implicit=True,
                  outputs=[t([4, 4])])
    relu = NodeInfo(name="r", kind="call_function", op="torch.relu", outputs=[t([4])])
    found = run_checks(g(lu, relu, phase="dynamo"), Profile(deny=["aten.linalg_lu_factor", "aten.relu"]))
    assert [(f.op, f.node.name) for f in found] == [("aten.linalg_lu_factor", "lu")]
