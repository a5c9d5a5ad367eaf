"""kdiff's stderr lines, from the typed records its worker writes (no torch, no run)."""

from __future__ import annotations

from pt2kit.kdiff.narrate import Narrator
from pt2kit.schema import Divergence


def test_a_divergence_at_a_line_of_the_captured_graph_names_the_users_line_that_called_it():
    # torch's own module compiled whole (nn.Sequential) leaves its nodes no line of the user's: the op's
    # line is the captured model file's, in the store, and the user's own is the call of the compiled code
    said: list[str] = []
    n = Narrator(said.append, "t.py[0/0]", captured=("/s/blobs/ad/ad.py", "/u/t.py:26"))
    n.on_divergence(Divergence(v=1, run="r", node="t_2", op="aten.t.default", source="/s/blobs/ad/ad.py:147",
                               code="input_5 = linear(input_4)", phase="backward", forward_op="aten.t.default"))
    assert said == ["t.py[0/0]: first divergence: aten.t.default (node t_2, backward graph, the gradient of "
                    "aten.t.default) at /s/blobs/ad/ad.py:147 (a line of the captured graph, none of yours; its "
                    "compiled code was called at /u/t.py:26)  input_5 = linear(input_4)"]
    said.clear()  # a node with the user's own line: that line, nothing more
    n.on_divergence(Divergence(v=1, run="r", node="relu", op="aten.relu.default", source="/u/t.py:14", code="x.relu()"))
    assert said == ["t.py[0/0]: first divergence: aten.relu.default (node relu) at /u/t.py:14  x.relu()"]
