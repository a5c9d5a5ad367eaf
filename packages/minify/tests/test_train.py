"""minify on failures of the backward (``--mode train``, or a failing gradient's diff piped in), planted in
real models whose backward graph really holds the op (models/train_nets.py): the repro is at most 3 ops,
fails alone (3 of 3 fresh runs, 1 of 1 for a compile error, and once more here), and passes once the fault is removed."""

from __future__ import annotations

import re
import shutil

import msgspec
import pytest
import torch
from mntest import MODELS, run_repro, switch_off

NETS = MODELS / "train_nets.py"
# the planted backward bugs live with kdiff's tests, once
BUGS = MODELS.parents[2] / "kdiff" / "tests" / "models" / "backward_bugs.py"
WRITES = MODELS.parents[2] / "kdiff" / "tests" / "models" / "inplace_input.py"  # a forward halving its batch in place
RELU_BUG = "cpp.inject_relu_bug_TESTING_ONLY"


def _train_step(model, x, compiled: bool):
    """(output, gradients) of one training step, as --mode train runs it."""
    from pt2kit.runtime.worker.training import train_step

    torch._dynamo.reset()
    params = list(model.parameters())
    out = train_step(lambda: (torch.compile(model) if compiled else model)(x), params)
    grads = [p.grad.clone() for p in params]
    torch._dynamo.reset()
    return out.detach(), grads


def _truth(entry: str):
    """The planted fault as a user meets it: (eager step, compiled step) of the model under the relu bug."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_nets", NETS)
    nets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nets)
    model, (x,) = getattr(nets, entry)()
    with torch._inductor.config.patch({RELU_BUG: "accuracy"}):
        return _train_step(model, x, False), _train_step(model, x, True)


def _repro_fails_then_passes_fixed(out, fix: tuple[str, str], first: str, where=None) -> None:
    """The repro fails, then passes once ``fix`` is made in ``where`` (the repro itself, or a backend file)."""
    p = run_repro(out)
    assert p.returncode == 1 and p.stdout.startswith(f"repro: the bug is present: {first}"), p.stdout + p.stderr
    switch_off(where or out, *fix)
    p = run_repro(out)
    assert p.returncode == 0 and "fixed" in p.stdout, p.stdout + p.stderr


def _grad_failure_stream(tmp_path) -> bytes:
    """What `kdiff --grad` writes of the squared-ReLU MLP under the relu bug: its model record, a failing
    gradient's diff and the backward divergence (kdiff's localisation names the relu of the backward)."""
    from pt2kit.schema import Diff, Divergence, Header, Metrics, Model

    common = dict(tool_version="1", argv=["kdiff"], time="t", host="h", python="3", store=str(tmp_path))
    metrics = Metrics(numel=512, max_abs=1.5, mean_abs=0.5, max_rel=3.0, rmse=0.7, mismatches=400, mismatch_share=0.78)
    lines = [Header(v=1, run="a", tool="kdiff", **common),
             Model(v=1, run="a", model="train_nets.py:sqrelu", file=str(NETS), entry="sqrelu",
                   config={RELU_BUG: "accuracy"}),
             Diff(v=1, run="a", model="train_nets.py:sqrelu", output="out", ref="eager", test="inductor",
                  atol=1e-5, rtol=1.3e-6, passed=True),
             Diff(v=1, run="a", model="train_nets.py:sqrelu", output="grad.fc1.weight", ref="eager", test="inductor",
                  dtype="float32", shape=[32, 16], atol=1e-5, rtol=1.3e-6, passed=False, close=False, metrics=metrics),
             Divergence(v=1, run="a", model="train_nets.py:sqrelu", output="grad.fc1.weight", node="relu",
                        op="aten.relu.default", phase="backward", forward_op="aten.clamp_min.default",
                        source=f"{NETS}:28")]
    return b"".join(msgspec.json.encode(x) + b"\n" for x in lines)


def test_a_wrong_gradient_piped_from_kdiff_is_cut_to_the_backward_graphs_relu(minify, tmp_path):
    """(b) The planted cpp relu bug, where only the backward has a relu: the forward stays right, a gradient
    is wrong. A piped failing grad.* diff (the model record says infer) runs the model as a training step,
    and the repro is the backward graph's relu alone, fed the forward's saved value."""
    (eager_out, eager_grads), (test_out, test_grads) = _truth("sqrelu")
    torch.testing.assert_close(test_out, eager_out)  # the forward is right
    with pytest.raises(AssertionError):
        torch.testing.assert_close(test_grads, eager_grads)  # a gradient is not
    out = tmp_path / "repro.py"
    r = minify("-o", str(out), stdin=_grad_failure_stream(tmp_path))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "accuracy" and rep["phase"] == "backward" and rep["ops"] == ["aten.relu.default"]
    assert rep["nodes_before"] > rep["nodes_after"] == 1 and rep["reproduced"] == 3 == rep["runs"]
    assert rep["config"] == {RELU_BUG: "accuracy"}
    assert "18 -> 1 ops (aten.relu.default) in the backward graph" in r.stderr, r.stderr
    (b,) = r.kind("bisect")  # bisected in the backward graph, as the repro runs it: relu's lowering there
    assert (b["phase"], b["backend"], b["subsystem"], b["what"], b["found"]) == (
        "backward", "inductor", "lowerings", "relu: aten.relu.default", True), b
    assert b["off"]["signature"] == "passes" and b["on"]["fails"]
    text = out.read_text()
    # the short form (a backend torch registers compiles a backward graph as an inference graph): the relu alone
    assert "(backward aten graph 0)" in text and "\nRuns: the backward graph alone" in text \
        and "short_accuracy(Repro, INPUTS" in text and len(text.splitlines()) <= 150, text
    assert re.search(r"# \S*train_nets.py:\d+  return grad \* torch.relu\(x\)\n", text)  # the user's backward line
    assert not re.search(r"^\s*(import|from) (pt2kit|pickle)", text, re.M)
    _repro_fails_then_passes_fixed(out, (r"CONFIG = .*", "CONFIG = {}"), "accuracy")


def test_a_nan_only_in_a_gradient_is_cut_in_the_backward_graph_with_a_dynamic_batch(minify, tmp_path):
    """(c) relu(x) ** 1.5 with its backward grad * sqrt(relu(x)): the relu bug takes the square root of a
    negative number in the backward only. The batch is marked dynamic: the repro compiles dynamic."""
    (eager_out, eager_grads), (test_out, test_grads) = _truth("relu15")
    torch.testing.assert_close(test_out, eager_out)
    assert all(torch.isfinite(g).all() for g in eager_grads) and any(torch.isnan(g).any() for g in test_grads)
    out = tmp_path / "repro.py"
    r = minify(f"{NETS}:relu15", "--mode", "train", "--config", f"{RELU_BUG}=accuracy", "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "nan" and rep["signature"] == "nan" and rep["phase"] == "backward"
    assert "aten.relu.default" in rep["ops"] and rep["nodes_after"] <= 3 and rep["reproduced"] == 3
    assert r.kind("model")[0]["train"] is True
    text = out.read_text()
    assert "the compiled gradient holds nan" in text
    # the short form (issue 58): the backward graph's outputs judged by the workers' own NaN rule, dynamic as it ran
    assert "def short_nan(" in text and len(text.splitlines()) <= 150, len(text.splitlines())
    assert "dynamic shapes" in text and text.rstrip().endswith("SIGNATURE, dynamic=True))")
    _repro_fails_then_passes_fixed(out, (r"CONFIG = .*", "CONFIG = {}"), "nan")


def _minified_through_a_backend(minify, tmp_path, entry: str, source, name: str):
    """(the repro record, its path, the backend file) of `minify NETS:entry --mode train` through the
    backend ``name`` of a copy of ``source`` (a test then removes the fault from that copy)."""
    backend = tmp_path / "backend.py"
    shutil.copy(source, backend)
    out = tmp_path / "repro.py"
    r = minify(f"{NETS}:{entry}", "--mode", "train", "--backend", f"{backend}:{name}", "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    return rep, out, backend


def test_a_backend_that_cannot_compile_gelu_backward_is_cut_to_gelu_run_as_a_training_step(minify, tmp_path):
    """(a) A backend of the user's file whose backward compiler raises on a graph holding gelu_backward,
    on a one-layer BERT: its forward compiles, its backward does not. The repro is Dynamo's gelu run as a
    training step through that backend; once the backend compiles gelu_backward it passes."""
    rep, out, backend = _minified_through_a_backend(minify, tmp_path, "bert", NETS, "gelu_backward_fails")
    assert rep["failure"] == "compile-error" and rep["phase"] == "joint"
    assert rep["signature"] == "NotImplementedError: this backend cannot compile aten.gelu_backward"
    assert rep["ops"] == ["torch.nn.functional.gelu"] and rep["reproduced"] == 1 == rep["runs"]  # a compile error
    text = out.read_text()
    # the short form (issue 58): PyTorch's own training step through the backend its file holds, loaded by path
    assert "Runs: a training step as PyTorch's minifier runs one (run_fwd_maybe_bwd" in text and \
        "def short_error(" in text and len(text.splitlines()) <= 150, len(text.splitlines())
    assert "(Repro, INPUTS, file_backend(BACKEND), CONFIG, " in text and text.rstrip().endswith("run=training(GRAD)))")
    _repro_fails_then_passes_fixed(out, (r'"gelu_backward" in str', '"no such op" in str'),
                                   f"compile-error: {rep['signature']}", backend)


def test_a_resnet_with_batchnorm_and_a_wrong_relu_gradient_is_cut_to_its_relu(minify, tmp_path):
    """A ResNet block with BatchNorm2d in train mode, under a backend whose threshold_backward lets ReLU's
    gradient through at 0 (torchvision's resnet18 hit this on the GPU machine: exit 3, eager saying
    batch_norm is "not differentiable with respect to running_mean", since every floating input was made
    to require grad). Only what required grad in the real step does: the BatchNorm buffers and the model's
    input do not, and the repro, a relu run as a training step, marks exactly its one input."""
    rep, out, backend = _minified_through_a_backend(minify, tmp_path, "bnres", BUGS, "relu_grad")
    assert rep["failure"] == "accuracy" and rep["phase"] == "joint" and rep["ops"] == ["torch.relu"]
    assert rep["nodes_before"] > rep["nodes_after"] == 1 and rep["reproduced"] == 3 == rep["runs"]
    text = out.read_text()
    # the short form (issue 58): the gradients judged by PyTorch's rule, through the backend its file holds
    assert "GRAD = [True]  # the INPUTS that require grad" in text and "def short_train(" in text \
        and "(Repro, INPUTS, GRAD, file_backend(BACKEND), CONFIG, " in text and len(text.splitlines()) <= 150
    assert re.search(r"# \S*train_nets.py:\d+  (out|h) = .*torch.relu\(", text)  # the user's line of that relu
    _repro_fails_then_passes_fixed(out, (r"self >= threshold", "self > threshold"), "accuracy", backend)


def test_a_training_step_differentiates_only_the_inputs_marked():
    """BatchNorm's running statistics are inputs no gradient may be asked of: marked as the real step had
    them, a candidate runs; with every floating input marked (what --mode train did) eager itself fails."""
    from pt2kit.minify.judge import harness

    def bn(x, mean, var, w, b):
        return (torch.nn.functional.batch_norm(x, mean, var, w, b, training=True),)

    inputs = [torch.randn(2, 3, 4), torch.zeros(3), torch.ones(3), torch.ones(3), torch.zeros(3)]
    grads = harness.gradients(bn, inputs, [False, False, False, True, True])
    assert [tuple(g.shape) for g in grads] == [(3,), (3,)]
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'running_mean'"):
        harness.gradients(bn, inputs)


def test_a_healthy_bert_trained_with_inductor_has_nothing_to_minify(minify):
    """No false alarm: a training step of a one-layer BERT (dropout on, drawn alike) passes."""
    r = minify(f"{NETS}:bert", "--mode", "train")
    assert r.code == 0, r.stderr
    assert "no failure to minify" in r.stderr and "a training step's outputs and gradients" in r.stderr, r.stderr
    assert not r.kind("repro") and r.kind("model")[0]["train"] is True


def test_which_graphs_a_failure_of_the_backward_is_searched_in():
    from pt2kit.minify import ir
    from pt2kit.minify.job import Job
    from pt2kit.minify.records import wanted
    from pt2kit.runtime.common.errors import UsageError
    from pt2kit.schema import Diff, Violation

    fw, bw = ir.Graph(index=0, nodes=[]), ir.Graph(index=0, nodes=[], phase="backward")
    dyn = ir.Graph(index=0, nodes=[], level="dynamo")
    assert ir.searched([fw, bw, dyn], "backward", True) == [bw, msgspec.structs.replace(dyn, phase="joint")]
    assert ir.searched([fw, bw, dyn], None, False) == [fw, dyn]
    assert len(ir.searched([fw, bw, dyn], None, True)) == 4  # a crash of unknown phase: forward graphs first
    grad = Diff(v=1, run="a", output="grad.fc1.weight", ref="eager", test="inductor", atol=0, rtol=0, passed=False)
    assert wanted(grad).phase == "backward"
    v = Violation(v=1, run="a", constraint="deny", message="m", phase="backward", op="aten.gelu_backward.default")
    assert wanted(v).op == "aten.gelu_backward.default" and wanted(v).phase == "backward"  # kept, no longer dropped
    with pytest.raises(UsageError, match="--mode train with --backend aoti"):
        Job(model="m.py", mode="train", backend="aoti")


def test_a_training_step_that_writes_its_batch_back_wrong_is_cut_to_the_write(minify, tmp_path):
    """Each step started from what the step before it left (the batch and the buffer halved once more) and
    what a step wrote in place was never judged: `kdiff --mode train | minify` of a backend writing the batch
    back wrong (its outputs and gradients right) said "nothing to minify", exit 0, after kdiff's FAIL
    written.inputs[0]."""
    out = tmp_path / "repro.py"
    r = minify(str(WRITES), "--backend", f"{WRITES}:bad_write", "--mode", "train", "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["ops"] == ["Tensor.mul_"] and rep["phase"] == "forward" and rep["reproduces"], rep
    p = run_repro(out)
    assert p.returncode == 1, p.stdout + p.stderr
    good = minify(str(WRITES), "--backend", f"{WRITES}:good", "--mode", "train")  # written back right: no finding
    assert good.code == 0 and "no failure to minify" in good.stderr, good.stderr


def test_the_original_steps_gradients_hold_an_input_that_required_grad(tmp_path):
    """A function of an input that requires grad (no parameter): its gradient is judged, under kdiff's name
    (grad.inputs[0]). Before, only parameters' were taken, and a compiled backward that got x's gradient
    wrong (pytorch/pytorch#183602 on 2.11: diagonal_scatter's, all zeros) was "minify's own run of it: passes
    assert_close, outputs and gradients: nothing to minify"."""
    from pt2kit.minify.worker.train import step
    from pt2kit.runtime.common.modelfile import load_model

    f = tmp_path / "m.py"
    f.write_text("import torch\n\n\ndef model(x, y):\n    return (x * 2).sin() * y\n\n\n"
                 "example_inputs = (torch.ones(3, requires_grad=True), torch.ones(3))\n")
    loaded = load_model(str(f))
    _, grads = step(loaded, loaded.model, 0)
    assert [n for n, _ in grads] == ["grad.inputs[0]"]
    torch.testing.assert_close(grads[0][1], torch.full((3,), 2 * torch.cos(torch.tensor(2.0)).item() / 3))
    assert loaded.inputs[0].grad is None  # the next step starts from none
