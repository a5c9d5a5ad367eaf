"""The gradients a script's backward hands a compiled graph, in its model file (issue 57, class 1): a
training step of pt2kit's tools feeds them, in their layout, in place of its own loss."""

from __future__ import annotations

import pytest
import torch
from test_boot import run

from pt2kit.runtime.worker.training import train_step

pytestmark = pytest.mark.xdist_group("boot-sum-grad")


def test_a_sum_backward_gradient_is_the_model_files_and_a_training_step_gives_the_scripts_gradient(tmp_path):
    r = run(tmp_path, "sum_grad.py")
    assert r.code == 0, r.stderr
    loaded = r.load("0/0")
    (g,) = loaded.grads  # what .sum().backward() made: ones, expanded (stride 0) over one element
    assert (g.shape, g.stride(), g.untyped_storage().nbytes(), g.tolist()) == ((3, 4), (0, 0), 4, [[1.0] * 4] * 3)
    (x,) = loaded.inputs
    train_step(lambda: loaded.call(torch.compile(loaded.model, backend="aot_eager")), [], loaded.grads)
    torch._dynamo.reset()
    # the script's own x.grad (2 cos 2x), not the tools' loss's (the mean's: a twelfth of it)
    torch.testing.assert_close(x.grad, r.saved["grad"])
