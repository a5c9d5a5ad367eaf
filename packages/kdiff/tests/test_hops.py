"""kdiff on models with higher-order ops (torch.cond, while_loop, flex_attention; auto_functionalized,
invoke_subgraph and tag_activation_checkpoint in `mixed`): the eager reference
runs under kdiff's near-tie mode, and localisation descends into the branch that diverges."""

from __future__ import annotations

import pytest
from kdtest import MODELS, Result, kdiff_in

HOPS = MODELS / "hops.py"
COND_LINE = next(i for i, ln in enumerate(HOPS.read_text().splitlines(), 1) if "torch.cond(" in ln)


def _kdiff(cwd, *args: str) -> Result:
    return kdiff_in(cwd, *args, timeout=900)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    d = tmp_path_factory.mktemp("hops")
    return {m: _kdiff(d, f"{HOPS}:{m}") for m in ("cond", "while_loop", "flex", "mixed")}


@pytest.mark.xdist_group("kdiff_hops")
@pytest.mark.parametrize("name", ["cond", "while_loop", "flex", "mixed"])
def test_a_healthy_model_with_a_higher_order_op_passes(healthy, name):
    r = healthy[name]
    assert r.code == 0, r.stderr
    (d,) = r.kind("diff")
    assert d["passed"] and d["output"] == "out" and r.kind("divergence") == []
    assert "crashed" not in r.stderr and "HigherOrderOperator" not in r.stderr.split("float64 run fails")[0]


@pytest.mark.xdist_group("kdiff_hops_bug")
def test_planted_relu_in_a_cond_branch_is_localised_inside_the_branch(tmp_path):
    r = _kdiff(tmp_path, f"{HOPS}:cond", "--config", "cpp.inject_relu_bug_TESTING_ONLY=accuracy")
    assert r.code == 1, r.stderr
    (v,) = r.kind("divergence")
    assert (v["op"], v["node"], v["subgraph"]) == ("aten.relu.default", "relu", "cond → true_graph_0")
    assert v["source"] == f"{HOPS}:{COND_LINE}" and v["code"].startswith("h = torch.cond(x.sum() > 0")
    assert v["metrics"]["mismatches"] > 0
    assert f"first divergence: aten.relu.default (node relu in cond → true_graph_0) at {HOPS}:{COND_LINE}" in r.stderr


def test_near_tie_inside_a_cond_branch_is_seen_with_the_users_line():
    import torch

    from pt2kit.kdiff.ties import TieRecorder

    s = torch.tensor([[1.0, 1.0 + 1e-7, 0.25]])

    def f(x):
        return torch.cond(x.sum() > 0, lambda t: t.sort(dim=-1).values * 2, lambda t: t * 3, (x,))  # the branch

    want = f(s)
    with TieRecorder() as rec:
        got = f(s)
    assert torch.equal(got, want)
    site = rec.nearest()
    assert site is not None and site.op == "aten.sort.default" and site.code.endswith("# the branch")
    assert rec.blind == []
