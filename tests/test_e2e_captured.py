"""`pt2kit capture -- python train_relu.py | benchrun | kdiff | minify -o repro.py | reportgen`, as a user
types it: a training script (tests/models/train_relu.py, not a model file) whose own Inductor config plants
the relu accuracy bug. The capture's record carries that setting, so kdiff (no --config) fails at the
script's relu line, minify ends with the 1-op relu repro that fails alone and passes without the bug, and
every record names the graph `train_relu.py[0/0]`. And a capture of a BatchNorm training script
(tests/models/train_bn.py) that kdiff --mode train takes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
from e2ekit import user_env

from pt2kit.testkit import run_alone

ROOT = Path(__file__).resolve().parents[1]
LABEL = "train_relu.py[0/0]"


def test_a_script_with_the_relu_bug_down_the_whole_pipe(tmp_path):
    script = tmp_path / "train_relu.py"
    shutil.copy(ROOT / "tests" / "models" / "train_relu.py", script)
    p = subprocess.run(
        "pt2kit capture -- python train_relu.py | benchrun --backend aot_eager --repeat 3 -q | kdiff -q | "
        "minify --no-bisect -o repro.py | tee s.ndjson | reportgen -o r.html -q; echo ${PIPESTATUS[@]}",
        shell=True, capture_output=True, cwd=tmp_path, executable="/bin/bash",
        env=user_env(PT2KIT_STORE=str(tmp_path / "store")))
    codes, err = p.stdout.decode().splitlines()[-1].split(), p.stderr.decode()
    assert codes == ["0", "0", "1", "1", "0", "0"], err[-3000:]  # benchrun ran, kdiff fails, minify made a repro
    assert "trained\n" in err  # the script's stdout, kept off the record stream
    recs = [msgspec.json.decode(x) for x in (tmp_path / "s.ndjson").read_bytes().splitlines()]
    (model,) = [r for r in recs if r["kind"] == "model"]  # forwarded by each tool, never written again
    assert model["captured"]["compile_id"] == "0/0" and model["model"] == LABEL
    assert model["settings"] == {"inductor.cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}  # the script's own
    named = {(r["kind"], r.get("model")) for r in recs if r["kind"] in ("bench", "diff", "divergence", "repro")}
    assert named == {("bench", LABEL), ("diff", LABEL), ("divergence", LABEL), ("repro", LABEL)}
    (div,) = [r for r in recs if r["kind"] == "divergence"]
    assert (div["op"], div["source"], div["code"]) == ("aten.relu.default", f"{script}:14", "return torch.relu(h) * 2")
    (rep,) = [r for r in recs if r["kind"] == "repro"]
    assert rep["ops"] == ["aten.relu.default"] and rep["reproduced"] == 3
    text = (tmp_path / "repro.py").read_text()
    assert f"{script}:14" in text
    assert f"minifying the accuracy failure of {LABEL}" in err
    html = (tmp_path / "r.html").read_text()
    assert '<section id="script">' in html and f"python train_relu.py: compile id 0/0, forward at {script}:12" in html
    # the repro alone: fails while the script's config plants the bug, passes once it is gone
    assert run_alone(tmp_path / "repro.py").returncode == 1
    (tmp_path / "fixed.py").write_text(re.sub(r"^CONFIG = .*$", "CONFIG = {}", text, count=1, flags=re.M))
    fixed = run_alone(tmp_path / "fixed.py")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


def test_a_captured_batchnorm_script_trains_in_kdiff(tmp_path):
    """`pt2kit capture -- python train_bn.py | kdiff --mode train`, for real: BatchNorm's running stats are
    buffers of the captured model (kdiff made floating inputs require grad, and batch_norm refuses a
    running_mean that does: it crashed, exit 3), the batch gets no gradient (it required none in the
    script's step), and torch's own nn.Sequential is named by the script's
    line that called it, not Dynamo's wrapper."""
    import torch

    from pt2kit.runtime.common.modelfile import load_model

    script = ROOT / "tests" / "models" / "train_bn.py"
    env = user_env(PT2KIT_STORE=str(tmp_path / "store"))
    py = sys.executable
    cap = subprocess.run([py, "-m", "pt2kit.capture", "--out", "cap.ndjson", "--", py, str(script)],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert (cap.returncode, cap.stdout) == (0, "loss 1.3743\n"), cap.stderr
    (model,) = [r for r in map(msgspec.json.decode, (tmp_path / "cap.ndjson").read_bytes().splitlines())
                if r["kind"] == "model"]
    call = next(i for i, line in enumerate(script.read_text().splitlines(), 1) if "step(x)" in line)
    assert (model["model"], model["captured"]["function"], model["captured"]["source"]) == (
        "train_bn.py[0/0]", "<module>", f"{script}:{call}")
    assert [i["name"] for i in model["inputs"]] == ["L_args_0_"] and model["parameters"] == model["trainable"] == 276
    buffers = dict(load_model(model["file"]).model.named_buffers())
    assert {k: v.dtype for k, v in buffers.items()} == {"fn.1.num_batches_tracked": torch.int64,
                                                        "fn.1.running_mean": torch.float32,
                                                        "fn.1.running_var": torch.float32}
    kd = subprocess.run([py, "-m", "pt2kit.kdiff", "--mode", "train", "--backend", "aot_eager"], capture_output=True,
                        cwd=tmp_path, env=env, input=(tmp_path / "cap.ndjson").read_bytes())
    assert kd.returncode == 0, kd.stderr.decode()[-3000:]
    diffs = [r for r in map(msgspec.json.decode, kd.stdout.splitlines()) if r["kind"] == "diff"]
    # the running stats the step writes in place are compared too (issue 45), each side from the file's values
    assert [(d["output"], d["passed"]) for d in diffs] == [(name, True) for name in (
        "out[0]", "written.fn.1.num_batches_tracked", "written.fn.1.running_mean", "written.fn.1.running_var",
        "grad.fn.0.weight", "grad.fn.0.bias", "grad.fn.1.weight", "grad.fn.1.bias", "grad.fn.5.weight",
        "grad.fn.5.bias")]


def test_a_captured_step_that_scales_its_batch_in_place_trains_in_kdiff(tmp_path):
    """`pt2kit capture -- python train_inplace.py | kdiff`: the record's `train` runs a training step whose
    leaves are the real step's (the parameters; the batch required no grad). kdiff made every floating
    input require grad, so the forward's `x.mul_(0.5)` raised 'a leaf Variable that requires grad is
    being used in an in-place operation', exit 3."""
    script = tmp_path / "train_inplace.py"
    shutil.copy(ROOT / "tests" / "models" / "train_inplace.py", script)
    env = user_env(PT2KIT_STORE=str(tmp_path / "store"))
    py = sys.executable
    cap = subprocess.run([py, "-m", "pt2kit.capture", "--out", "cap.ndjson", "--", py, str(script)],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert (cap.returncode, cap.stdout) == (0, "trained\n"), cap.stderr
    kd = subprocess.run([py, "-m", "pt2kit.kdiff", "--backend", "aot_eager"], capture_output=True,
                        cwd=tmp_path, env=env, input=(tmp_path / "cap.ndjson").read_bytes())
    assert kd.returncode == 0, kd.stderr.decode()[-3000:]
    recs = list(map(msgspec.json.decode, kd.stdout.splitlines()))
    assert [r["train"] for r in recs if r["kind"] == "model"] == [True]
    # what the step writes into its batch is judged too (it was not: the step ran on copies of the inputs
    # and the writes were read off the originals)
    assert [(r["output"], r["passed"]) for r in recs if r["kind"] == "diff"] == [
        ("out[0]", True), ("written.inputs[0]", True), ("grad.fc.weight", True), ("grad.fc.bias", True)]
