"""Each captured model file is checked to run where the script's graph did (issue 45): a compiled Adam step
(Dynamo writes its addcmul_ as torch.ops.prims.fma) is written with the import that registers the op, so
`| kdiff` judges it; a graph calling an op the script registered itself cannot run in any model file, and
its record, capture's stderr and kdiff say so ("cannot judge"), never "the model's own eager run fails".
The capture and kdiff over scripts/optstep.py are tests/test_e2e_runs_here.py's (kdiff is not installed
with capture); here, the check itself on model files written by hand."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xdist_group("capture-runs-here")


class _Chan:
    def stage(self, name):
        pass

    def note(self, key, value):
        pass


def test_a_model_file_whose_outputs_are_not_the_graphs_is_said_so_with_the_difference(tmp_path):
    from pt2kit.capture.runs import work

    f = tmp_path / "g0_0.py"
    f.write_text("import torch\nmodel = lambda x: (x.double(), x.sum())\nexample_inputs = (torch.ones(2, 3),)\n")
    same = [{"dtype": "torch.float64", "shape": [2, 3]}, {"dtype": "torch.float32", "shape": []}]
    other = [{"dtype": "torch.float32", "shape": [2, 3]}, {"dtype": "torch.float32", "shape": []}]
    bad = tmp_path / "g1_0.py"
    bad.write_text("import torch\nmodel = lambda x: torch.ops.nowhere_ns.f(x)\nexample_inputs = (torch.ones(1),)\n")
    assert work({"files": [{"file": str(f), "grad": False, "outputs": same},
                           {"file": str(f), "grad": False, "outputs": other},
                           {"file": str(f), "grad": False, "outputs": same[:1]},
                           {"file": str(f), "grad": False, "outputs": None},
                           {"file": str(bad), "grad": False, "outputs": None}]}, _Chan()) == [
        None, "output 0 is float64[2, 3], the graph gave float32[2, 3]", "it gives 2 output(s), the graph gave 1",
        None, "AttributeError: '_OpNamespace' 'nowhere_ns' object has no attribute 'f'"]


def test_a_higher_order_op_dynamo_cannot_trace_as_written_is_said_so_not_left_to_crash_the_next_tool(tmp_path):
    """Issue 45: a flex_attention call written in the graph's form (the op with its subgraphs' captured
    tensors, 9 arguments) runs eagerly but Dynamo traces only the script's form (7): kdiff compiling it
    crashed in Dynamo, a record users would report as a compiler bug. The check traces a file that calls a
    higher-order op with Dynamo (backend eager) and says why it cannot; capture writes flex_attention in
    the form Dynamo traces (test_modelfile.py), so this is the net for an op it does not yet."""
    from pt2kit.capture.runs import work

    bad = tmp_path / "g0_0.py"
    bad.write_text('''import torch
from torch.nn.attention.flex_attention import create_block_mask


def score(s, b, h, m, n):
    return s * 2


BLOCKS = create_block_mask(lambda b, h, q, kv: q >= kv, 1, 1, 16, 16, device="cpu").as_tuple()


class Model(torch.nn.Module):
    def forward(self, q, k, v):
        return torch.ops.higher_order.flex_attention(q, k, v, score, BLOCKS, 0.5, {}, (), ())


model = Model()
example_inputs = tuple(torch.ones(1, 1, 16, 8) for _ in range(3))
''')
    assert work({"files": [{"file": str(bad), "grad": False, "outputs": None, "trace": False},
                           {"file": str(bad), "grad": False, "outputs": None, "trace": True}]}, _Chan()) == [
        None, "Dynamo cannot trace it as it traced the script: InternalTorchDynamoError: ValueError: too many values "
              "to unpack (expected 7)"]


def test_a_graph_whose_shapes_torch_propagates_wrong_runs_and_is_left_to_kdiff(tmp_path):
    """Issue 57 (pytorch#183121): a decomposition that keeps a reduced dimension is also what Dynamo's fake
    tensors propagate, so the graph's example value said [5, 1] where eager gives [5], and the check called the
    file "does not run here": minify went to the script and kdiff could not judge the wrong shape. Planted here
    as a torch whose meta kernel of linalg_vector_norm is wrong (torch.library, for this test's scope): where
    the file's own propagation here gives the graph's shape again, the file runs (None) and the shape that
    eager disagrees with is kdiff's to judge; a shape nothing here propagates stays a reason."""
    import torch
    from torch.library import _scoped_library

    from pt2kit.capture.runs import work

    f = tmp_path / "g0_0.py"
    f.write_text("import torch\nmodel = lambda x: torch.linalg.vector_norm(x, dim=-1)\n"
                 "example_inputs = (torch.ones(5, 7),)\n")
    wrong = [{"dtype": "torch.float32", "shape": [5, 1]}]
    files = [{"file": str(f), "grad": False, "outputs": wrong},
             {"file": str(f), "grad": False, "outputs": [{"dtype": "torch.float32", "shape": [5, 3]}]}]
    unplanted = work({"files": files}, _Chan())
    # FakeTensorMode's dispatch cache (one per process) would give the unplanted shape again, and keep the
    # planted one for later tests: off while planted
    with _scoped_library("aten", "IMPL") as lib, torch._dynamo.config.patch(fake_tensor_cache_enabled=False):
        lib.impl("linalg_vector_norm", lambda x, *a, **k: x.new_empty([*x.shape[:-1], 1]), "Meta")
        planted = work({"files": files}, _Chan())
    assert unplanted == ["output 0 is float32[5], the graph gave float32[5, 1]",
                         "output 0 is float32[5], the graph gave float32[5, 3]"]
    assert planted == [None, "output 0 is float32[5], the graph gave float32[5, 3]"]
