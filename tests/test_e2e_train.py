"""`--mode train` on a plain-function model file, the same in kdiff, minify and benchrun: a function has
no parameters and no mode, so a training step differentiates the inputs that require grad in the file
(the real step's rule, pt2kit.runtime.worker.training), and one with none is one line, exit 2. kdiff raised
"'function' object has no attribute 'train'", exit 3, where minify and benchrun said a line of their own."""

from __future__ import annotations

import os
import subprocess
import sys

import msgspec
import pytest

FUNCTION = """import torch


def model(x, y):
    return (x * y).sin()


example_inputs = (torch.randn(4, 4{grad}), torch.randn(4, 4))
"""


@pytest.mark.parametrize("tool", ["kdiff", "minify", "benchrun"])
def test_a_function_with_nothing_requiring_grad_is_refused_alike(tool, tmp_path):
    (tmp_path / "fn.py").write_text(FUNCTION.format(grad=""))
    env = dict(os.environ, PT2KIT_STORE=str(tmp_path / "store"))
    p = subprocess.run([sys.executable, "-m", f"pt2kit.{tool}", "fn.py", "--mode", "train"], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=600)
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines()[-1] == (
        f"{tool}: error: fn.py: --mode train: the model is a function and no input requires grad, so a training "
        "step has no gradient to take (make the inputs that should be trained with requires_grad=True)")


def test_a_function_trains_the_inputs_that_require_grad(tmp_path):
    (tmp_path / "fn.py").write_text(FUNCTION.format(grad=", requires_grad=True"))
    env = dict(os.environ, PT2KIT_STORE=str(tmp_path / "store"))
    p = subprocess.run([sys.executable, "-m", "pt2kit.kdiff", "fn.py", "--mode", "train", "--backend", "aot_eager"],
                       capture_output=True, cwd=tmp_path, env=env, timeout=600)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    diffs = [r for r in map(msgspec.json.decode, p.stdout.splitlines()) if r["kind"] == "diff"]
    assert [(d["output"], d["passed"]) for d in diffs] == [("out", True), ("grad.inputs[0]", True)]
