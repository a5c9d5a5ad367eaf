"""kdiff on graphs that write in place (issue 45): what a call writes to its inputs, parameters and
buffers is compared like an output (leaves ``written.<name>``), and every side starts from the values
the model file loaded, whatever a side before it wrote. A compiled Adam step (models/adam_step.py: it
returns nothing, its whole effect is its writes) under a backend with aten.lerp's decomposition planted
wrong fails on exactly the tensors the bug reaches (exp_avg, and the parameters stepped with it) and
names aten.lerp; the healthy step's pass (16 leaves) is tests/test_e2e_runs_here.py's, on the graph
`pt2kit capture` writes for a real `torch.compile(opt.step)`. A forward halving its input and a buffer in
place passes: before, the test side started from the buffer the reference had halved and failed."""

from __future__ import annotations

import pytest
from kdtest import MODELS, kdiff_in

ADAM = MODELS / "adam_step.py"


@pytest.fixture(scope="module")
def buggy_adam(tmp_path_factory):
    return kdiff_in(tmp_path_factory.mktemp("adam"), str(ADAM), "--backend", f"{ADAM}:buggy_lerp")


@pytest.mark.xdist_group("kdiff_written_adam")
def test_a_wrong_in_place_write_of_an_optimizer_step_fails_naming_the_written_tensor_and_the_op(buggy_adam):
    r = buggy_adam
    assert r.code == 1, r.stderr
    diffs = {d["output"]: d["passed"] for d in r.kind("diff")}
    params = ["net.0.weight", "net.0.bias", "net.1.weight", "net.1.bias"]
    states = [f"{s}_{i}" for s in ("step", "exp_avg", "exp_avg_sq") for i in range(4)]
    assert sorted(diffs) == sorted(f"written.{n}" for n in params + states)  # nothing returned: writes alone
    failed = sorted(n for n, ok in diffs.items() if not ok)
    # lerp makes exp_avg, and the parameters are stepped by it; step and exp_avg_sq do not use it
    assert failed == sorted(f"written.{n}" for n in params + [f"exp_avg_{i}" for i in range(4)]), failed
    assert f"adam_step.py: FAIL written.exp_avg_0 ({ADAM}:buggy_lerp vs eager): " in r.stderr
    (v,) = r.kind("divergence")
    assert (v["op"], v["node"]) == ("aten.lerp.Scalar", "lerp") and v["output"].startswith("written."), v
    assert "adam_step.py: first divergence: aten.lerp.Scalar (node lerp)" in r.stderr
    assert f"adam_step.py: 8 of 16 leaves pass ({ADAM}:buggy_lerp vs eager; 16 written in place;" in r.stderr
    assert "cannot judge" not in r.stderr


@pytest.mark.xdist_group("kdiff_written_input")
def test_a_forward_that_writes_its_input_is_judged_with_both_sides_starting_from_the_same_input(tmp_path):
    r = kdiff_in(tmp_path, str(MODELS / "inplace_input.py"), "--backend", "aot_eager", "--verdict", "close")
    assert r.code == 0, r.stderr  # was exit 1, "FAIL out": the test side had started from the halved buffer
    assert {d["output"]: d["passed"] for d in r.kind("diff")} == {
        "out": True, "written.inputs[0]": True, "written.scale": True}
    assert "inplace_input.py: 3 of 3 leaves pass (aot_eager vs eager; 2 written in place;" in r.stderr


@pytest.mark.xdist_group("kdiff_written_input")
def test_a_training_step_judges_what_it_writes_into_its_input(tmp_path):
    """The step runs on copies of the inputs (so its gradients never reach the model file's): kdiff read the
    writes off the originals, which no side touched, and a backend writing the batch back wrong (outputs and
    gradients right) got "4 of 4 leaves pass", exit 0, under --mode train; --mode infer found it."""
    r = kdiff_in(tmp_path, str(MODELS / "inplace_input.py"), "--backend", f"{MODELS / 'inplace_input.py'}:bad_write",
                 "--mode", "train")
    assert r.code == 1, r.stderr
    diffs = {d["output"]: d["passed"] for d in r.kind("diff")}
    assert diffs == {"out": True, "written.inputs[0]": False, "written.scale": True, "grad.fc.weight": True,
                     "grad.fc.bias": True}, diffs
    (v,) = r.kind("divergence")
    assert v["op"] == "aten.mul.Tensor" and v["source"] == f"{MODELS / 'inplace_input.py'}:14", v
    good = f"{MODELS / 'inplace_input.py'}:good"  # the batch written back right: no false finding
    healthy = kdiff_in(tmp_path, str(MODELS / "inplace_input.py"), "--backend", good, "--mode", "train")
    assert healthy.code == 0 and f"5 of 5 leaves pass ({good} vs eager; 2 written in place;" in healthy.stderr, \
        healthy.stderr
