"""kdiff's stderr lines, from the typed records its worker writes (no torch, no run)."""

from __future__ import annotations

from pt2kit.kdiff.narrate import Narrator
from pt2kit.schema import Diff, Divergence, Metrics


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


def _grad(name: str, max_abs: float, *, passed: bool = False) -> Diff:
    return Diff(v=1, run="r", output=f"grad.{name}", ref="eager", test="inductor", atol=1e-5, rtol=1e-5, passed=passed,
                metrics=Metrics(numel=4, max_abs=max_abs, mean_abs=max_abs, max_rel=1.0, rmse=max_abs, mismatches=4,
                                mismatch_share=1.0))


def test_failing_gradients_are_one_line_after_the_divergence_and_a_lone_one_its_own_line():
    said: list[str] = []
    n = Narrator(said.append, "m.py", job=type("J", (), {"test": "inductor", "ref": "eager"})())
    for name, x in (("stem.weight", 1.0), ("stem.bias", float("nan")), ("head.weight", 3.0), ("head.bias", 0.5)):
        n.on_diff(_grad(name, x))
    n.on_diff(_grad("norm.weight", 0.0, passed=True))
    assert said == []  # nothing before the cause
    n.on_divergence(Divergence(v=1, run="r", node="gelu_backward", op="aten.gelu_backward.default",
                               phase="backward", forward_op="aten.gelu.default"))
    assert said[1:] == ["m.py: FAIL 4 gradients differ (inductor vs eager): grad.stem.weight, grad.stem.bias and 2 "
                        "more; the largest, max abs nan, in grad.stem.bias"]
    said.clear()
    n.on_diff(_grad("stem.weight", 2.0))  # one alone, no divergence said (--no-localize): its own line, at the end
    n._say_grads()
    assert said == ["m.py: FAIL grad.stem.weight (inductor vs eager): max abs 2, 4 mismatched"]
