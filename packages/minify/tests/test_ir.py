"""Candidates as source, torch-free: what a cut feeds in, what it returns, how shapes shrink; and
`minify --help` imports no torch."""

from __future__ import annotations

import subprocess
import sys

from pt2kit.minify import ir


def _spec(*shape: int) -> ir.Spec:
    stride, acc = [], 1
    for d in reversed(shape):
        stride.insert(0, acc)
        acc *= d
    return ir.Spec("tensor", list(shape), stride, "float32", "cpu")


G = ir.Graph(index=0, nodes=[
    ir.Node(name="x", op="input", spec=_spec(8, 32)),
    ir.Node(name="ln", expr="torch.ops.aten.native_layer_norm.default(x, [32], None, None, 1e-05)", deps=["x"],
            op="aten.native_layer_norm.default", spec=None),
    ir.Node(name="getitem", expr="ln[0]", deps=["ln"], op="<built-in function getitem>", spec=_spec(8, 32)),
    ir.Node(name="relu", expr="torch.ops.aten.relu.default(getitem)", deps=["getitem"], op="aten.relu.default",
            spec=_spec(8, 32), place="m.py:19", code="x = torch.relu(x)"),
    ir.Node(name="view", expr="torch.ops.aten.view.default(relu, [8, 32, 1])", deps=["relu"], op="aten.view.default",
            spec=_spec(8, 32, 1), output=True),
])


def test_a_cut_feeds_the_dropped_value_in_and_returns_the_sinks():
    c = ir.build(G, {"relu"})
    assert c is not None and c.nodes == 1 and c.ops == ["aten.relu.default"]
    assert "def forward(self, getitem):" in c.source and "return (relu, )" in c.source
    assert "# m.py:19  x = torch.relu(x)" in c.source
    assert [s.shape for s in c.inputs] == [[8, 32]]


def test_a_tuple_cannot_be_fed_in():
    assert ir.build(G, {"getitem", "relu"}) is None  # it would need layer_norm's tuple as an input
    whole = ir.build(G, {"ln", "getitem", "relu", "view"})
    assert whole is not None and "def forward(self, x):" in whole.source and whole.nodes == 4


def test_shrinking_renames_a_size_in_shapes_and_literals_and_keys_differ():
    c = ir.build(G, {"relu", "view"}, rename={32: 1, 8: 4})
    assert c is not None and "[4, 1, 1]" in c.source and [s.shape for s in c.inputs] == [[4, 1]]
    assert c.key != ir.build(G, {"relu", "view"}).key and ir.sizes(ir.build(G, {"relu"})) == [32, 8]


def test_help_imports_no_torch():
    code = ("import sys\nfrom pt2kit.minify.cli import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert not {'torch', 'matplotlib', 'triton', 'rich'} & set(sys.modules), sorted(sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "--failure" in p.stdout and "Exit codes:" in p.stdout
