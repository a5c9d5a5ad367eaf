"""Each captured model file is checked to run where the script's graph did (issue 45): a compiled Adam step
(Dynamo writes its addcmul_ as torch.ops.prims.fma) is written with the import that registers the op, so
`| kdiff` judges it (it returns nothing: kdiff judges what it writes in place, its 4 parameters and their
step, exp_avg and exp_avg_sq, where it said "cannot judge" and before that "0 of 0 leaves pass"); a graph calling an op the script registered itself cannot run in any model file, and its record,
capture's stderr and kdiff say so ("cannot judge"), never "the model's own eager run fails". One capture of
packages/capture/tests/scripts/optstep.py and one kdiff over it, shared by the asserts (across two tools:
an e2e test, where both are installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pt2kit.schema import Diff, Error, Model, decode

SCRIPTS = Path(__file__).resolve().parents[1] / "packages" / "capture" / "tests" / "scripts"
pytestmark = pytest.mark.xdist_group("e2e-runs-here")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    cap = subprocess.run([sys.executable, "-m", "pt2kit.capture", "--store", str(store), "--", sys.executable,
                          "optstep.py"], capture_output=True, cwd=SCRIPTS)
    kd = subprocess.run([sys.executable, "-m", "pt2kit.kdiff", "--store", str(store)], input=cap.stdout,
                        capture_output=True)
    models = {r.model: r for r in map(decode, cap.stdout.splitlines()) if isinstance(r, Model)}
    return cap, models, kd


def test_the_compiled_adam_step_imports_the_op_it_calls_and_kdiff_judges_it(run):
    cap, models, kd = run
    assert cap.returncode == 0, cap.stderr
    (adam,) = [m for m in models.values() if m.captured.function == "step"]
    text = Path(adam.file).read_text()
    assert "torch.ops.prims.fma" in text and "\nimport torch._inductor.inductor_prims\n" in text
    assert adam.captured.unrunnable is None
    err = kd.stderr.decode()
    # the step returns nothing: its writes in place are what is judged, every one a leaf
    assert (f"{adam.model}: 16 of 16 leaves pass (aot_eager vs eager; 16 written in place; PyTorch's "
            "accuracy-harness precision: TF32 off, Inductor's fallback_random on)") in err, err
    written = [r.output for r in map(decode, kd.stdout.splitlines()) if isinstance(r, Diff) and r.model == adam.model]
    assert len(written) == 16 and all(o.startswith("written.") for o in written), written
    assert sum("param_groups_0__params___" in o for o in written) == 4, written  # the rest: Adam's state
    assert "cannot judge" not in err.split(f"{adam.model}: 16 of 16")[0]
    assert "the model's own" not in err


def test_a_graph_calling_an_op_the_script_registered_cannot_run_and_kdiff_cannot_judge_it(run):
    cap, models, kd = run
    (own,) = [m for m in models.values() if m.captured.function == "scaled"]
    why = own.captured.unrunnable
    assert why.startswith("AttributeError: ") and "pt2kit_optstep::twice is registered by " in why, why
    assert f"{SCRIPTS / 'optstep.py'}:23" in why  # the script's own line, not torch's custom_op machinery
    assert f"capture: warning: {own.model}: the captured graph does not run here: {why}" in cap.stderr.decode()
    assert (f"kdiff: error: {own.model}: cannot judge: the captured graph does not run here: {why}"
            in kd.stderr.decode())
    assert kd.returncode == 2  # cannot judge (README's Outcomes), after the Adam graph was judged
    errors = [r for r in map(decode, kd.stdout.splitlines()) if isinstance(r, Error)]
    # this graph alone: said, and the stream's other graph judged
    assert [(e.model, e.exit_code) for e in errors] == [(own.model, 2)]
