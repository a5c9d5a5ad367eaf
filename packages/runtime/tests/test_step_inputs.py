"""A training step's inputs (step_inputs: kdiff's --mode train and --grad) are copied by the rule every run
copies inputs by (pt2kit_portable.copy_inputs, minify's harness.fresh), then given the real step's
requires_grad. No compile."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_a_training_steps_inputs_keep_their_layout_and_shared_storage_and_leave_the_callers_alone():
    """An expanded gradient stays expanded (a clone made it dense, and a backward bug that lives in the layout
    left), inputs that shared a storage share the copy (a write into one is read through the other), a
    Parameter is copied too, and only what required grad in the real step requires it."""
    from pt2kit.runtime.worker.training import step_inputs

    base, grad = torch.zeros(4, 4), torch.randn(4, 1).expand(4, 3)
    weight = torch.nn.Parameter(torch.randn(2))
    x, row, g, w, n = step_inputs([base, base[1], grad, weight, 3])
    assert (g.stride(), row.storage_offset(), n) == ((1, 0), 4, 3) and torch.equal(g, grad)
    assert (x.requires_grad, g.requires_grad, w.requires_grad, w.is_leaf) == (False, False, True, True)
    assert type(w) is torch.Tensor and w.data_ptr() != weight.data_ptr() and torch.equal(w, weight)
    x.add_(1)
    assert row.tolist() == [1.0] * 4 and not base.any()
    x, row, g, w, n = step_inputs([base, base[1], grad, weight, 3], every_floating=True)
    assert all(t.requires_grad for t in (x, row, g, w))
