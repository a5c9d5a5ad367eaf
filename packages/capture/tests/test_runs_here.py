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
