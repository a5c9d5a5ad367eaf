"""pt2kit.runtime.worker.hops: a mode sees the ops inside higher-order ops, and a captured cond compiles."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pt2kit.runtime.worker.hops import HopAwareMode, hop_name, is_hop, materialise, subgraphs  # noqa: E402


class Names(HopAwareMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def watch(self, func, args, kwargs):
        self.ops.append(str(func))
        return func(*args, **kwargs)


def test_cond_branch_ops_are_seen_and_the_result_is_eager_s():
    x = torch.arange(6.0).reshape(2, 3)
    branch = (lambda t: t.relu() * 3, lambda t: t.tanh())
    want = torch.cond(x.sum() > 0, *branch, (x,))
    with Names() as m:
        got = torch.cond(x.sum() > 0, *branch, (x,))
    assert torch.equal(got, want)
    assert "aten.relu.default" in m.ops and "aten.tanh.default" not in m.ops  # the branch that ran
    assert m.blind == []


def test_while_loop_body_ops_are_seen_every_iteration():
    from torch._higher_order_ops.while_loop import while_loop

    def body(i, h):
        return i + 1, h.sin()

    with Names() as m:
        i, h = while_loop(lambda i, h: i < 3, body, (torch.tensor(0), torch.ones(2)))
    assert int(i) == 3 and torch.allclose(h, torch.ones(2).sin().sin().sin())
    assert m.ops.count("aten.sin.default") == 3


def test_scan_and_associative_scan_combine_fns_are_seen():
    from torch._higher_order_ops.associative_scan import associative_scan
    from torch._higher_order_ops.scan import scan

    x = torch.arange(1.0, 7.0).reshape(2, 3)
    want = scan(lambda c, r: (c + r.sin(), c.clone()), torch.zeros(3), x)
    with Names() as m:
        got = scan(lambda c, r: (c + r.sin(), c.clone()), torch.zeros(3), x)
        prod = associative_scan(lambda a, b: a * b, x, dim=1, combine_mode="generic")
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    assert torch.equal(prod, torch.cumprod(x, 1)) and m.blind == []
    assert "aten.sin.default" in m.ops and "aten.mul.Tensor" in m.ops


def test_a_captured_cond_graph_compiles_once_materialised():
    captured = []

    def backend(gm, example):
        captured.append(gm)
        return gm

    def f(x):
        return torch.cond(x.sum() > 0, lambda t: t.relu(), lambda t: t.neg(), (x,))

    x = torch.ones(3)
    torch.compile(f, backend=backend, fullgraph=True)(x)
    (gm,) = captured
    (node,) = [n for n in gm.graph.nodes if is_hop(n.target)]
    assert hop_name(node.target) == "cond"
    assert [name for name, _ in subgraphs(gm, node)] == ["cond_true_0", "cond_false_0"]
    torch._dynamo.reset()
    out = torch.compile(materialise(gm), backend="eager")(x)
    assert torch.equal(out[0], x.relu())
    assert hop_name(torch.ops.aten.relu.default) is None
