"""Issue 57, classes 1 and 2: what the script's graph had reaches the repro. An input's layout (an expanded
gradient's stride 0, views that overlap, a slice at an offset into a larger storage) is written with its
stride, storage offset and storage size, and made by the one function capture's model files run too
(pt2kit_portable.make_tensor); a constant the graph holds (the index list of ``x[[0, 0]]``) is written by
value, so the compiler sees a constant again. Each planted bug lives only there: before, minify ended
"does not reproduce ... (they pass)" (exit 3) for the first, and cut the second to Dynamo's ``getitem``
run as a training step, not the backward's index_put where the bug is."""

from __future__ import annotations

import msgspec
import torch
from mntest import MODELS, run_repro

from pt2kit.minify import ir
from pt2kit.minify.judge.harness import make_inputs
from pt2kit.minify.worker.toir import _spec, by_value, to_ir
from pt2kit_portable import to_float64


def _laid_out(t: torch.Tensor) -> tuple:
    return tuple(t.shape), t.stride(), t.storage_offset(), t.untyped_storage().nbytes()


def test_a_graphs_inputs_are_made_in_the_layout_the_graph_saw():
    """toir's spec of each value, through make_inputs (the repro's), gives back its shape, stride, storage
    offset and storage size; an expanded input is one row in memory, as it was."""
    torch.manual_seed(0)
    real = [torch.randn(4, 3)[:1].expand(4, 3), torch.randn(10).as_strided((4, 3), (2, 1)),
            torch.randn(20)[8:].view(3, 4), torch.randn(3, 4).t()]
    specs = [_spec(t, t, "cpu") for t in real]  # each with its real values (small tensors)
    seeded = make_inputs([msgspec.structs.replace(s, values=None).as_tuple() for s in specs])
    assert [_laid_out(t) for t in seeded] == [_laid_out(t) for t in real] == [
        ((4, 3), (0, 1), 0, 48), ((4, 3), (2, 1), 0, 40), ((3, 4), (4, 1), 8, 80), ((4, 3), (1, 4), 0, 48)]
    assert torch.equal(seeded[0][0], seeded[0][3]) and torch.equal(seeded[1][0, 2], seeded[1][1, 0])
    assert specs[2].as_tuple()[-1] == {"offset": 8} and specs[0].as_tuple()[-1] == {"storage": 12}
    exact = make_inputs([s.as_tuple() for s in specs])  # the real values, where a failure needs them
    assert all(torch.equal(a, b) for a, b in zip(exact, real, strict=True))


def test_a_constant_the_graph_holds_is_written_by_value():
    """An aten graph's ``_tensor_constant0`` (``x[[0, 0]]``'s index list) is made in the candidate's forward,
    not fed in: Dynamo and AOTAutograd make it a constant of the graph again, as the compiler saw it. A
    parameter a graph reads by get_attr (Dynamo's, where it does not inline the module) is still fed in."""
    root, g = torch.nn.Module(), torch.fx.Graph()
    root._tensor_constant0, root.w = torch.tensor([0, 0]), torch.nn.Parameter(torch.ones(2))
    x = g.placeholder("x")
    index = g.call_function(torch.ops.aten.index.Tensor, (x, [g.get_attr("_tensor_constant0")]))
    g.output(g.call_function(torch.ops.aten.mul.Tensor, (index, g.get_attr("w"))))
    gm = torch.fx.GraphModule(root, g)
    graph = to_ir(gm, [torch.randn(3, 2)], 0, "cpu")
    cand = ir.build(graph, {n.name for n in graph.compute})
    assert cand is not None and cand.names == ["x", "w"]  # the constant is no input
    assert "        _tensor_constant0 = torch.tensor([0, 0], dtype=torch.int64)\n" in cand.source
    assert by_value(_spec(torch.tensor([[1.5, float("nan")]]), torch.tensor([[1.5, float("nan")]]), "cpu")) == \
        "torch.tensor([[1.5, float('nan')]], dtype=torch.float32)"


def test_a_failure_in_an_expanded_inputs_layout_reaches_a_repro_that_fails_alone(minify, tmp_path):
    model = MODELS / "layout_bug.py"
    r = minify(str(model), "--backend", f"{model}:dense_reader", "--no-bisect", "-o", "repro.py")
    assert r.code == 1, r.stderr[-3000:]
    (rep,) = [x for x in r.records if x["kind"] == "repro"]
    assert (rep["failure"], rep["ops"], rep["reproduced"]) == ("accuracy", ["operator.mul"], 3)
    text = (tmp_path / "repro.py").read_text()
    assert "('tensor', [4, 3], [0, 1], 'float32', 'cpu'," in text and "{'storage': 12}" in text
    # the short form (issue 58), its inputs laid out as in the script by make_laid_inputs
    assert "def make_laid_inputs(" in text and len(text.splitlines()) <= 150, len(text.splitlines())
    alone = run_repro(tmp_path / "repro.py")
    assert alone.returncode == 1 and alone.stdout.startswith("repro: the bug is present: accuracy: output 0 fails "), \
        alone.stdout + alone.stderr
    dense = tmp_path / "dense.py"  # the same row made contiguous: the planted reader is right on it
    dense.write_text(text.replace("('tensor', [4, 3], [0, 1], 'float32', 'cpu',", "('tensor', [4, 3], [3, 1], 'float32', "
                                                                                   "'cpu',"))
    assert run_repro(dense).returncode == 0


def test_a_backward_bug_on_a_constant_index_list_is_cut_to_its_op_in_the_backward_graph(minify, tmp_path):
    model = MODELS / "constant_index.py"
    r = minify(str(model), "--mode", "train", "--backend", f"{model}:backend", "--no-bisect", "-o", "repro.py")
    assert r.code == 1, r.stderr[-3000:]
    (rep,) = [x for x in r.records if x["kind"] == "repro"]
    assert (rep["failure"], rep["phase"]) == ("accuracy", "backward")
    assert rep["ops"] == ["aten.lift_fresh_copy.default", "aten.index_put.default"]
    text = (tmp_path / "repro.py").read_text()
    assert "        _tensor_constant0 = torch.tensor([0, 0], dtype=torch.int64)\n" in text
    alone = run_repro(tmp_path / "repro.py")
    assert alone.returncode == 1 and "repro: the bug is present: accuracy: output 0:" in alone.stdout, \
        alone.stdout + alone.stderr


def test_inputs_that_shared_a_storage_are_views_of_one_in_the_candidate():
    """f(a, a[1]) that writes a and reads a[1]: made apart, the candidate read the row unwritten (b * 2 of
    the seeded row, where the script got the written one); made as views of one storage, it reads the write.
    A view past the first input's elements makes that storage larger."""
    g = torch.fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    add_ = g.call_function(torch.ops.aten.add_.Tensor, (a, 1))
    g.output((add_, g.call_function(torch.ops.aten.mul.Tensor, (b, 2))))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    base = torch.zeros(4, 4)
    graph = to_ir(gm, [base, base[1]], 0, "cpu")
    cand = ir.build(graph, {n.name for n in graph.compute})
    assert [s.as_tuple()[7:] for s in cand.inputs] == [(), (None, {"offset": 4, "view_of": 0})]
    made = make_inputs([s.as_tuple() for s in cand.inputs])
    assert made[1].untyped_storage().data_ptr() == made[0].untyped_storage().data_ptr()
    before = made[0][1].clone()
    scope: dict = {"torch": torch}
    exec(cand.source, scope)
    _, doubled = scope["Repro"]()(*made)
    assert torch.equal(doubled, (before + 1) * 2)  # the write into a, read through b
    graph = to_ir(gm, [base[:2], base[3]], 0, "cpu")
    cand = ir.build(graph, {n.name for n in graph.compute})
    assert [s.as_tuple()[-1] for s in cand.inputs] == [{"storage": 16}, {"offset": 12, "view_of": 0}]
    made = make_inputs([s.as_tuple() for s in cand.inputs])
    assert torch.equal(made[1], torch.as_strided(made[0], (4,), (1,), 12))


def test_a_graph_that_writes_one_of_two_inputs_on_one_storage_compiles_and_its_float64_run_reads_the_write():
    """f(x, x[1]) writing x, as a candidate's inputs make it: Inductor compiles it (AOTAutograd refused a view made of a
    detached copy, "aliased inputs ... have ._base fields that point to different tensors", so no side could run), the
    compiled run writes and reads as eager does, and the float64 reference (to_float64) keeps the two inputs views of
    one widened storage, so it reads the write too (widened apart, the row read the unwritten values)."""
    def f(x, y):
        x.add_(1)
        return (torch.relu(y) * 2,)

    specs = [("tensor", [4, 4], [4, 1], "float32", "cpu", -2.0, 2.0),
             ("tensor", [4], [1], "float32", "cpu", -2.0, 2.0, None, {"offset": 4, "view_of": 0})]
    eager_in, test_in = make_inputs(specs), make_inputs(specs)
    (eager,) = f(*eager_in)
    with torch.no_grad():  # as the workers and a repro run a graph at inference
        (test,) = torch.compile(f, backend="inductor")(*test_in)
    assert torch.equal(test, eager) and torch.equal(test_in[0], eager_in[0])
    wide = to_float64(make_inputs(specs))
    assert wide[1].untyped_storage().data_ptr() == wide[0].untyped_storage().data_ptr()
    (fp64,) = f(*wide)
    assert torch.allclose(fp64, eager.double()) and wide[0].dtype == torch.float64
    apart = [t.double() for t in make_inputs(specs)]
    assert not torch.allclose(f(*apart)[0], eager.double())  # what the reference was before


def test_an_inline_tensor_a_complex_number_and_an_op_are_written_as_arguments():
    """A graph's argument that is a small tensor held inline, a complex number or an op (as a higher-order op
    takes one) has a source form now: the node is no longer left out as one a standalone file cannot write."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    add = g.call_function(torch.ops.aten.add.Tensor, (x, torch.tensor([1.0, 2.0])))
    mul = g.call_function(torch.ops.aten.mul.Tensor, (add, 2j))
    g.output((mul, g.call_function(torch.ops.aten.view_as_real.default, (mul,))))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    real = [torch.randn(2)]
    graph = to_ir(gm, real, 0, "cpu")
    assert not graph.unwritable
    cand = ir.build(graph, {n.name for n in graph.compute})
    assert "torch.ops.aten.add.Tensor(x, torch.tensor([1.0, 2.0], dtype=torch.float32))" in cand.source
    assert "torch.ops.aten.mul.Tensor(add_tensor, 2j)" in cand.source
    scope: dict = {"torch": torch}
    exec(cand.source, scope)
    assert torch.equal(scope["Repro"]()(*real)[0], (real[0] + torch.tensor([1.0, 2.0])) * 2j)
    from pt2kit.minify.worker.toir import _fmt

    assert _fmt(torch.ops.aten.relu.default) == "torch.ops.aten.relu.default"
