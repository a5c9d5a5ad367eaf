"""fxcheck inside higher-order ops: cond branches, while_loop bodies, flex_attention's score_mod.

The cond model is checked once (a module fixture) and its assertions read that one run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fxtest import MODELS, fxcheck_in, model


def _fxcheck(tmp: Path, *args: str) -> tuple[int, list[dict], str]:
    r = fxcheck_in(tmp, *args, store=tmp)
    return r.code, r.records, r.stderr


def _found(records: list[dict], constraint: str) -> list[tuple[str, str | None, str | None]]:
    return [(v.get("op"), v.get("subgraph"), (v.get("source") or "").rpartition("/")[2])
            for v in records if v["kind"] == "violation" and v["constraint"] == constraint]


@pytest.fixture(scope="module")
def cond(tmp_path_factory):
    return _fxcheck(tmp_path_factory.mktemp("cond"), model("cond.py"), "--deny", "aten.tanh.default",
                    "--align", "16")


@pytest.mark.xdist_group("fxcheck-cond")
def test_deny_finds_tanh_in_the_false_branch_at_its_line(cond):
    code, records, stderr = cond
    assert code == 1, stderr
    assert _found(records, "deny") == [("aten.tanh.default", "cond → false_graph_0", "cond.py:16")]
    deny = next(v for v in records if v["kind"] == "violation" and v["constraint"] == "deny")
    assert deny["code"] == "return self.b(t).tanh()" and deny["source"] == f"{MODELS / 'cond.py'}:16"
    assert "cond.py:16: deny: aten.tanh.default is denied by the profile (forward, in cond → false_graph_0)" in stderr
    # the graph record counts what its branches hold
    forward = next(g for g in records if g["kind"] == "graph" and g["phase"] == "forward")
    assert forward["ops"]["aten.tanh.default"] == 1 and forward["ops"]["higher_order.cond"] == 1


@pytest.mark.xdist_group("fxcheck-cond")
def test_every_check_sees_branch_nodes_each_branch_its_own_finding(cond):
    _, records, _ = cond
    # the same Linear shape in both branches: two places to fix, not one finding counted twice
    assert [f for f in _found(records, "align") if f[0] == "aten.addmm.default"] == [
        ("aten.addmm.default", "cond → true_graph_0", "cond.py:13"),
        ("aten.addmm.default", "cond → false_graph_0", "cond.py:16"),
    ]
    # a branch's placeholders are the cond's operands, found once, where they were made
    inputs = [v for v in records if v["kind"] == "violation" and v["node"].startswith("arg")]
    assert [(v["message"].split(":")[0], v.get("subgraph")) for v in inputs] == [("input x (arg0_1)", None)]


def test_while_loop_body_is_checked(tmp_path):
    code, records, stderr = _fxcheck(tmp_path, model("whileloop.py"), "--deny", "aten.tanh")
    assert code == 1, stderr
    assert _found(records, "deny") == [("aten.tanh.default", "while_loop → while_loop_body_graph_0", "whileloop.py:16")]


def test_flex_attention_score_mod_is_checked(tmp_path):
    code, records, stderr = _fxcheck(tmp_path, model("flex.py"), "--deny", "aten.abs.default")
    assert code == 1, stderr
    # torch keeps no frame inside score_mod in the aten graph: the line is the user's flex_attention call
    assert _found(records, "deny") == [("aten.abs.default", "flex_attention → sdpa_score0", "flex.py:17")]
