"""aotiprint --jit on models with higher-order ops: its eager NaN/Inf watch runs them (never exit 3)
and looks inside their branches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

# the higher-order-op models live with kdiff's tests, once
HOPS = Path(__file__).parents[2] / "kdiff" / "tests" / "models" / "hops.py"


@pytest.mark.xdist_group("aotiprint_hops")
@pytest.mark.parametrize("name", ["cond", "while_loop", "flex"])
def test_jit_runs_a_model_with_a_higher_order_op(name, tmp_path):
    p = subprocess.run([sys.executable, "-m", "pt2kit.aotiprint", "--jit", f"{HOPS}:{name}"], capture_output=True,
                       cwd=tmp_path, timeout=900)
    err = p.stderr.decode()
    assert p.returncode == 0, err  # healthy models: finite outputs, no NaN/Inf anywhere
    kernels = [msgspec.json.decode(x) for x in p.stdout.splitlines() if x.startswith(b'{"kind":"kernel"')]
    assert kernels and not any(k.get("finding") for k in kernels)
    assert "crashed" not in err and "HigherOrderOperator" not in err


def test_eager_watch_sees_nan_made_inside_a_cond_branch():
    import torch

    from pt2kit.aotiprint.nonfinite import eager_kinds

    class M(torch.nn.Module):
        def forward(self, x):
            # log of a negative number inside the branch; nan_to_num hides it from the output
            return torch.cond(x.sum() > 0, lambda t: torch.nan_to_num(torch.log(t - 1)), lambda t: t * 2, (x,))

    blind: list[str] = []
    x = torch.tensor([0.5, 2.0, 3.0])
    assert torch.isfinite(M()(x)).all()
    assert eager_kinds(M(), (x,), {}, blind) == ["nan"] and blind == []  # log(-0.5), unseen at the output
