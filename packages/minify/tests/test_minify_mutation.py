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

from pt2kit.minify.toir import to_ir
from pt2kit.runtime.aotgraphs import forward_graphs


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
