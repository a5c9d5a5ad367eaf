"""capture_forward on what a user's model takes: a torch.nested jagged input is captured as the dense aten
graph AOTAutograd makes of it, with the real arguments it runs on (issue 37)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_a_jagged_input_is_captured_as_the_dense_aten_graph_of_its_values_and_offsets():
    from pt2kit.runtime.capture import capture_forward
    from pt2kit.runtime.tensors import jagged

    lin = torch.nn.Linear(3, 3)
    x = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)], layout=torch.jagged)
    dynamo: list = []
    ((gm, args),) = capture_forward(lambda t: torch.relu(lin(t)), lambda fn: fn(x), dynamo=dynamo)
    assert not any(getattr(a, "is_nested", False) for a in args)  # plain tensors and sizes only
    parts = jagged(x)
    assert any(isinstance(a, torch.Tensor) and torch.equal(a, parts.values) for a in args)
    assert any(isinstance(a, torch.Tensor) and torch.equal(a, parts.offsets) for a in args)
    out = gm(*args)[0]  # the graph runs on them: the values of the jagged result
    assert torch.equal(out, torch.relu(lin(parts.values)))
    ((_, dyn_args),) = dynamo  # Dynamo's graph takes the jagged tensor itself, and its nested int kept as is
    assert sum(jagged(a) is not None for a in dyn_args) == 1
