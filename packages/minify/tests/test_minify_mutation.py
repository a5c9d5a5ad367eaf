"""In-place writes and their order (issue 57, class 3). A graph that reads an input and then writes it: the
graph minify cuts keeps the write (the copy_ into the input that ends the graph Inductor is handed), its
original run starts from the inputs the model file made (the capture ran the model and wrote them), and a
failure that needs two ops together is kept as that pair and said so, on stderr and in the repro. Before: "mutation_order.py runs the
same eagerly and with inductor", exit 0, no repro."""

from __future__ import annotations

import re

import pytest
import torch
from mntest import MODELS, minify_in

from pt2kit.minify import ir
from pt2kit.minify.worker.toir import to_ir
from pt2kit.runtime.worker.aotgraphs import forward_graphs


@pytest.fixture(scope="module")
def write_first(tmp_path_factory):
    """``minify mutation_order.py -o repro.py --no-bisect``, run once for the tests of its group."""
    d = tmp_path_factory.mktemp("write-first")
    r = minify_in(d, str(MODELS / "mutation_order.py"), "-o", str(d / "repro.py"), "--no-bisect", store=d / "store")
    return r, d / "repro.py"


@pytest.mark.xdist_group("write-first")
def test_a_failure_that_needs_a_read_and_a_write_together_is_kept_as_both_and_said(write_first):
    r, out = write_first
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["ops"] == ["aten.bmm.default", "aten.copy_.default"] and rep["reproduced"] == 3 == rep["runs"], rep
    assert re.search(r"^minify: mutation_order.py: \[[\d.]+s\] (ahead, while the original runs: )?the failure needs "
                     r"aten.bmm and aten.copy_ together; each passes alone$", r.stderr, re.M), r.stderr
    # the repro holds the read, then the write of the same input; minify's 3 fresh runs of it alone exited 1
    text = out.read_text()
    assert "\nThe failure needs aten.bmm and aten.copy_ together; each passes alone.\n" in text.split('"""')[1]
    assert re.search(r"bmm = torch.ops.aten.bmm.default\(arg0_1, arg1_1\)\n.*\n\s+copy_ = "
                     r"torch.ops.aten.copy_.default\(arg0_1, ", text), text


def test_a_graph_that_writes_its_input_keeps_the_write_and_the_inputs_values_before_it():
    a, b, c = torch.ones(2, 3, 4), torch.randn(2, 4, 5), torch.full((2, 3, 4), -3.0)

    def read_then_write(a, b, c):
        out = torch.bmm(a, b)
        a.copy_(c)
        return out

    ((gm, args),) = forward_graphs(read_then_write, lambda fn: fn(a.clone(), b, c), keep_input_mutations=True)
    g = to_ir(gm, args, 0, "cpu")
    by = g.by_name()
    (write,) = [n for n in g.nodes if n.op == "aten.copy_.default"]
    assert write.deps[0] == "arg0_1" and by["arg0_1"].op == "input"
    # the input's spec is its value as it came in (all ones), not the -3s the graph's own copy_ wrote into it
    assert (by["arg0_1"].spec.lo, by["arg0_1"].spec.hi) == (1.0, 1.0)
    assert torch.equal(args[0], torch.ones(2, 3, 4))  # recording the specs ran the graph on copies


def test_a_write_into_an_input_is_the_one_in_place_op_the_user_wrote_and_traces_back_to_the_same_graph():
    # pytorch#174074's script: AOTAutograd writes the user's one in-place op as index_put and a copy_ of it into
    # the input. A repro writes it as index_put_ again: one op fewer (neither of the pair can go alone), and
    # AOTAutograd turns it back into the same pair, so the backend is handed the same graph. Before: both.
    def f(x):
        x[[0, 0]] += x[[0, 0]]
        return x

    x = torch.tensor([[-0.8716, 0.1114]], dtype=torch.float64)
    ((gm, args),) = forward_graphs(f, lambda fn: fn(x.clone()), keep_input_mutations=True)
    g = to_ir(gm, args, 0, "cpu")
    assert [n.op for n in g.compute if n.op != "aten.lift_fresh_copy.default"] == [
        "aten.index.Tensor", "aten.index.Tensor", "aten.add.Tensor", "aten.index_put_.default"]
    c = ir.build(g, {n.name for n in g.compute})
    assert re.search(r"\n +copy_ = torch.ops.aten.index_put_.default\(arg0_1, \[lift_fresh_copy_2\], add\)\n", c.source)
    ns = {"torch": torch}
    exec(c.source, ns)
    repro = ns["Repro"]()
    ((again, _),) = forward_graphs(repro, lambda fn: fn(x.clone()), keep_input_mutations=True)
    ops = [str(n.target) for n in again.graph.nodes if n.op == "call_function"]
    assert [o for o in ops if o not in ("aten.lift_fresh_copy.default", "aten.clone.default")] == [
        "aten.index.Tensor", "aten.index.Tensor", "aten.add.Tensor", "aten.index_put.default", "aten.copy_.default"]
    mine, theirs = x.clone(), x.clone()
    f(mine), repro(theirs)
    assert torch.equal(mine, theirs) and not torch.equal(mine, x)


def test_a_copy_into_an_input_that_casts_or_copies_an_input_stays_a_copy():
    def f(x, y, z):
        x.copy_(x.add(1.5))  # an int input: add's value is a float, copy_ casts it (add_ would refuse)
        y.copy_(z)
        return x + y

    a, b, c = torch.arange(4), torch.zeros(4), torch.ones(4)
    ((gm, args),) = forward_graphs(f, lambda fn: fn(a.clone(), b.clone(), c), keep_input_mutations=True)
    assert [n.op for n in to_ir(gm, args, 0, "cpu").compute].count("aten.copy_.default") == 2
