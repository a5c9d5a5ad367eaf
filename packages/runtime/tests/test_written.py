"""pt2kit.runtime.worker.written.Start.pair: the one rule kdiff's sides and minify's check line written leaves up by."""

from __future__ import annotations

import torch

from pt2kit.runtime.worker.written import Start


def test_pair_completes_each_side_with_the_others_writes_and_lines_them_up_in_the_first_sides_order():
    m = torch.nn.Module()
    m.register_buffer("a", torch.zeros(2))
    m.register_buffer("b", torch.zeros(2))
    x = torch.ones(2)
    start = Start(m, (x,))
    m.a.add_(2)  # eager writes both buffers
    m.b.add_(1)
    eager = [("out", x * 3), *start.written(m, (x,))]
    start.restore()
    x.add_(5)  # the compiled side writes its input and a, not b
    m.a.add_(2)
    test = [*start.written(m, (x,))[::-1], ("out", x * 3)]  # in an order of its own
    start.restore()
    start.pair(eager, test, None)
    names = ["out", "written.a", "written.b", "written.inputs[0]"]
    assert [n for n, _ in eager] == names == [n for n, _ in test]
    got = dict(test)
    assert got["written.b"].tolist() == [0.0, 0.0]  # not written on this side: its starting value
    assert dict(eager)["written.inputs[0]"].tolist() == [1.0, 1.0] and got["written.inputs[0]"].tolist() == [6.0, 6.0]
