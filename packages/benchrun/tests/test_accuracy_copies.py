"""benchrun's accuracy check runs each side (eager, the compiled model, the float64 reference) on its own copy
of the model file's inputs (pt2kit_portable.copy_inputs, as kdiff's sides do). In process, one aot_eager
compile of a one-op model."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from brtest import MODELS

torch = pytest.importorskip("torch")


def test_a_model_that_writes_its_input_passes_accuracy_with_each_side_on_its_own_copy():
    """x.neg_(): each side ran on the inputs as the side before left them, so the compiled side negated eager's
    -1 and the float64 run negated it back: a right compile was fail_accuracy ("RMSE vs float64 2 > 3 x eager's
    0; e.g. 1 vs -1"), exit 1. Each side now starts from the model file's values, which stay as they were."""
    from pt2kit.benchrun.work import _judged
    from pt2kit.runtime.common.modelfile import load_model

    loaded = load_model(f"{MODELS / 'small.py'}:writes_input", device="cpu")
    with torch.no_grad():
        got = _judged(SimpleNamespace(mode="infer", seed=0, backend="aot_eager"), loaded, None)
    assert got["accuracy"] == "pass", got
    assert loaded.inputs[0].tolist() == [1.0] * 4
