"""minify on higher-order ops: a bug inside a torch.cond branch is cut to the op in the branch; where
the op stays, it stays whole (its subgraphs written as nested functions), and that source runs."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from mntest import run_repro

# the higher-order-op models live with kdiff's tests, once
HOPS = Path(__file__).parents[2] / "kdiff" / "tests" / "models" / "hops.py"


@pytest.mark.xdist_group("minify_hops")
def test_relu_bug_inside_a_cond_branch_is_cut_to_the_relu_in_the_branch(minify, tmp_path):
    out = tmp_path / "repro.py"
    r = minify(f"{HOPS}:cond", "--config", "cpp.inject_relu_bug_TESTING_ONLY=accuracy", "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "accuracy" and rep["ops"] == ["aten.relu.default"]
    assert rep["subgraph"] == "cond → true_graph_0" and rep["reproduced"] == 3 == rep["runs"]
    assert "1 ops (aten.relu.default) inside cond → true_graph_0" in r.stderr
    text = out.read_text()
    assert "(forward aten graph 0, its subgraph cond → true_graph_0)" in text
    assert re.search(r"# \S*hops.py:\d+  h = torch.cond\(", text)  # the user's line, as a comment
    p = run_repro(out)
    assert p.returncode == 1 and p.stdout.startswith("repro: the bug is present: accuracy"), p.stdout + p.stderr
    out.write_text(re.sub(r"CONFIG = .*", "CONFIG = {}", text, count=1))
    p = run_repro(out)
    assert p.returncode == 0 and "fixed" in p.stdout, p.stdout + p.stderr


@functools.cache
def _models():
    import importlib.util

    spec = importlib.util.spec_from_file_location("hops_models", HOPS)
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)  # once: it registers a custom op
    return models


@pytest.mark.parametrize("name", ["cond", "while_loop"])
def test_a_higher_order_op_is_written_whole_and_runs_as_the_graph_does(name):
    import torch

    from pt2kit.minify import ir
    from pt2kit.minify.worker import toir, work
    from pt2kit.runtime.worker.aotgraphs import forward_graphs

    model, inputs = getattr(_models(), name)()
    ((gm, args),) = forward_graphs(model, lambda fn: fn(*inputs))
    g = toir.to_ir(gm, args, 0, "cpu")
    whole = ir.build(g, {n.name for n in g.compute}, exact=True)
    assert whole is not None and f"= torch.ops.higher_order.{name}(" in whole.source
    hop = next(n for n in g.nodes if n.op == f"higher_order.{name}")
    assert all(d in {n.name for n in g.nodes if n.op == "subgraph"} or by.op != "subgraph"
               for d in hop.deps for by in [g.by_name()[d]])
    # without its subgraphs the op cannot stand: no candidate keeps it so
    assert ir.build(g, {hop.name}) is None
    want = gm(*args)
    got = work._module(whole.source)()(*[a for a in args])
    assert torch.allclose(got[0], want[0])
