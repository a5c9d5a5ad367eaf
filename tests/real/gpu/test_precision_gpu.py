"""Issue 30 on a GPU: verdicts mean what PyTorch's accuracy harness means (TF32 off, deterministic cuDNN,
fallback_random), `--precision as-configured` reports the model's own modes, and Inductor's planted triton
relu bug is a failure at the relu under both. Skipped without CUDA; run on the GPU machine by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

GPU = Path(__file__).parent
RELU_BUG = "triton.inject_relu_bug_TESTING_ONLY=accuracy"
HEALTHY = ["vit_hf.py", "patch_embed.py", "tf32_matmul.py"]


def _kdiff(tool, name: str, *args: str):
    return tool("kdiff", str(GPU / name), "--device", "cuda", *args)


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_models_pass_under_the_harness_precision(tool, name):
    r = _kdiff(tool, name)
    assert r.code == 0, r.stderr
    assert r.kind("header")[0]["precision"] == "harness"
    assert all(d["passed"] for d in r.kind("diff")) and r.kind("divergence") == []


def test_a_model_files_own_tf32_is_turned_off_and_said_so(tool):
    r = _kdiff(tool, "tf32_matmul.py")
    assert "the model turned on TF32 matmul: judged with it off" in r.stderr, r.stderr


@pytest.mark.parametrize("name,mode,op", [("vit_hf.py", "TF32 cuDNN", "aten.convolution"),
                                         ("patch_embed.py", "TF32 cuDNN", "aten.convolution"),
                                         ("tf32_matmul.py", "TF32 matmul", "aten.")])
def test_as_configured_reports_tf32_and_never_calls_it_a_bug(tool, name, mode, op):
    r = _kdiff(tool, name, "--precision", "as-configured")
    assert r.code == 0, r.stderr
    diffs = r.kind("diff")
    assert all(mode in d["precision"]["ref"] and mode in d["precision"]["test"] for d in diffs), diffs
    for d in diffs:  # a leaf that differs only with TF32 on passes with the mode and the op named
        if d["rule"] == "precision":
            p = d["precision"]
            assert p["harness_passed"] is True and p["op"].startswith(op), p
            assert f"PRECISION {d['output']}: " in r.stderr and " in aten." in d["note"]
    assert "as configured: reference " in r.stderr and mode in r.stderr


@pytest.mark.parametrize("precision", ["harness", "as-configured"])
@pytest.mark.parametrize("name,line", [("patch_embed.py", 17), ("tf32_matmul.py", 16)])
def test_planted_triton_relu_bug_fails_at_the_relu_under_either_precision(tool, name, line, precision):
    r = _kdiff(tool, name, "--precision", precision, "--config", RELU_BUG)
    assert r.code == 1, r.stderr
    assert not any(d.get("rule") == "precision" for d in r.kind("diff") if not d["passed"])
    (v,) = r.kind("divergence")
    assert v["op"] == "aten.relu.default" and v["source"] == f"{GPU / name}:{line}", v


@pytest.mark.parametrize("precision", ["harness", "as-configured"])
def test_minify_cuts_the_planted_relu_and_its_repro_carries_the_precision(tool, tmp_path, precision):
    out = tmp_path / f"repro_{precision}.py"
    r = tool("minify", str(GPU / "tf32_matmul.py"), "--device", "cuda", "--precision", precision,
             "--config", RELU_BUG, "-o", str(out))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["ops"] == ["aten.relu.default"] and rep["reproduced"] == 3, rep
    text = out.read_text()
    # as configured, the repro sets the model file's TF32; under the harness, TF32 off
    assert ("'matmul': 'tf32'" in text) == (precision == "as-configured"), text[:3000]


def test_benchrun_accuracy_status_is_the_harness_s(tool):
    ok = tool("benchrun", str(GPU / "patch_embed.py"), "--device", "cuda", "--repeat", "5")
    assert ok.code == 0 and ok.kind("bench")[-1]["accuracy"] == "pass", ok.stderr
    bad = tool("benchrun", str(GPU / "patch_embed.py"), "--device", "cuda", "--repeat", "5", "--config", RELU_BUG)
    assert bad.code == 1 and bad.kind("bench")[-1]["accuracy"] == "fail_accuracy", bad.stderr
