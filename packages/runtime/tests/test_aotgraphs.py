"""forward_graphs on what a user's model takes: a torch.nested jagged input is captured as the dense aten
graph AOTAutograd makes of it, with the real arguments it runs on (issue 37)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_a_jagged_input_is_captured_as_the_dense_aten_graph_of_its_values_and_offsets():
    from pt2kit.runtime.common.tensors import jagged
    from pt2kit.runtime.worker.aotgraphs import forward_graphs

    lin = torch.nn.Linear(3, 3)
    x = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)], layout=torch.jagged)
    dynamo: list = []
    ((gm, args),) = forward_graphs(lambda t: torch.relu(lin(t)), lambda fn: fn(x), dynamo=dynamo)
    assert not any(getattr(a, "is_nested", False) for a in args)  # plain tensors and sizes only
    parts = jagged(x)
    assert any(isinstance(a, torch.Tensor) and torch.equal(a, parts.values) for a in args)
    assert any(isinstance(a, torch.Tensor) and torch.equal(a, parts.offsets) for a in args)
    out = gm(*args)[0]  # the graph runs on them: the values of the jagged result
    assert torch.equal(out, torch.relu(lin(parts.values)))
    ((_, dyn_args),) = dynamo  # Dynamo's graph takes the jagged tensor itself, and its nested int kept as is
    assert sum(jagged(a) is not None for a in dyn_args) == 1


def test_training_graphs_pair_each_backward_with_its_forward_and_its_real_saved_values():
    """Two Dynamo graphs (a graph break between them): each backward is paired with its own forward, its
    arguments are what that forward saved plus the tangents, and running it gives eager's gradients."""
    from pt2kit.runtime.worker.aotgraphs import forward_node_of, training_graphs
    from pt2kit.runtime.worker.training import train_step

    torch.manual_seed(0)
    first, second = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def model(x):
        h = torch.relu(first(x))
        torch._dynamo.graph_break()
        return torch.tanh(second(h))

    x = torch.randn(3, 8)
    params = [*first.parameters(), *second.parameters()]
    graphs = training_graphs(model, lambda fn: train_step(lambda: fn(x), params))
    assert len(graphs) == 2 and all(g.backward is not None for g in graphs)
    ops = [{str(n.target) for n in g.backward.graph.nodes if n.op == "call_function"} for g in graphs]
    assert "aten.threshold_backward.default" in ops[0] and "aten.tanh_backward.default" in ops[1]
    relu_grad = next(n for n in graphs[0].backward.graph.nodes if "threshold_backward" in str(n.target))
    assert str(forward_node_of(relu_grad, graphs[0].forward).target) == "aten.relu.default"

    train_step(lambda: model(x), params)  # eager's gradients of the same loss
    want = {id(p): p.grad.clone() for p in params}
    # the second graph's backward, on its captured arguments, gives the second Linear's gradients
    out = [t for t in graphs[1].backward(*graphs[1].backward_args) if isinstance(t, torch.Tensor)]
    for p in second.parameters():
        assert any(o.shape == p.shape and torch.allclose(o, want[id(p)], atol=1e-6) for o in out)


def test_the_training_loss_is_the_sum_of_each_floating_outputs_mean():
    from pt2kit.runtime.common.errors import UsageError
    from pt2kit.runtime.worker.training import loss_of

    a = torch.ones(2, 3, requires_grad=True)
    b = torch.full((4,), 2.0, dtype=torch.float16, requires_grad=True)
    loss = loss_of({"a": a * 3, "b": b, "n": torch.arange(3), "c": torch.ones(2)})  # ints, no-grad left out
    assert loss.item() == 5.0 and loss.dtype == torch.float32
    with pytest.raises(UsageError, match="no floating output of the model requires grad"):
        loss_of((torch.arange(3),))


def test_a_graphs_argument_is_copied_in_its_layout():
    """An expanded gradient (``.sum().backward()``'s stride 0), a view at an offset into a larger storage: the
    copy minify cuts a graph on keeps both (a clone made them dense, and a bug that lives in the layout left)."""
    from pt2kit.runtime.worker.aotgraphs import concrete

    g, v = torch.randn(4, 1).expand(4, 3), torch.randn(20)[8:].view(3, 4)
    got = [concrete(g), concrete(v)]
    assert [(t.stride(), t.storage_offset(), t.untyped_storage().nbytes()) for t in got] == [
        ((1, 0), 0, 16), ((4, 1), 8, 80)]
    assert torch.equal(got[0], g) and torch.equal(got[1], v) and got[1].data_ptr() != v.data_ptr()


def test_a_calls_arguments_that_share_a_storage_share_the_copy_the_graph_runs_on():
    """f(a, a[1]): the arguments forward_graphs keeps for Dynamo's graph and AOTAutograd's (what minify cuts)
    are copied together by copy_inputs' rule, every run's, so they share one storage as in the call: a write into
    one is read through the other. Copied one at a time, the row read its values unwritten."""
    from pt2kit.runtime.worker.aotgraphs import forward_graphs

    base = torch.zeros(4, 4)
    dynamo: list = []
    ((_, args),) = forward_graphs(lambda a, row: a * 2 + row.sum(), lambda fn: fn(base, base[1]), dynamo=dynamo)
    ((_, dyn_args),) = dynamo
    for a, row in (args, dyn_args):
        assert a.untyped_storage().data_ptr() == row.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
        a.add_(1)
        assert row.tolist() == [1.0] * 4 and not base.any()
