"""An op with two outputs (``aten.max.dim``'s values and indices) whose indices alone are wrong: the first tensor
that differs is the ``getitem`` taking them, and kdiff names the op that computed them, as a title must (before,
"first divergence: <built-in function getitem>", and triage's title "wrong results in <built-in function
getitem>" on pytorch#178964). The backend is AOTAutograd with max.dim's decomposition planted wrong: no Inductor
compile, about 7 s."""
from __future__ import annotations

from kdtest import MODELS, kdiff_in

MAX = MODELS / "max_indices.py"


def test_a_wrong_second_output_is_named_by_the_op_that_made_it(tmp_path):
    r = kdiff_in(tmp_path, str(MAX), "--backend", f"{MAX}:wrong_indices", timeout=300)
    assert r.code == 1, r.stderr
    assert [d["output"] for d in r.kind("diff") if not d["passed"]] == ["out[1]"]  # the values pass
    (v,) = r.kind("divergence")
    assert (v["node"], v["op"], v["source"]) == ("getitem_1", "aten.max.dim", f"{MAX}:14")
    assert (f"first divergence: aten.max.dim (node getitem_1) at {MAX}:14  return (a + b).max(dim=1)  # line 14"
            in r.stderr)
