"""Eager raises, the compiled side returns (issue 57, the mirror of class 4's signal):
torch.mv of float16 and float32, which eager refuses and Inductor computes on torch 2.13 (real, not planted:
tests/models/mv_dtype_mismatch.py).
capture kept the graph as one that "does not run here" (its eager run raises), so kdiff and minify said
"cannot judge" and triage stopped at exit 2. The missing error is the failure: kdiff writes it as a failing
`diff` naming eager's error, minify cuts it to the op and the repro exits 1 while the compiled side returns,
0 where it raises as eager does (compiled by aot_eager, which runs eager's kernels).

One module fixture runs capture, kdiff, minify and the two repros once; the tests read its results."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from e2ekit import user_env

from pt2kit.testkit import run_alone

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
pytestmark = pytest.mark.xdist_group("missing_error")
SCRIPT = "mv_dtype_mismatch.py"


def _records(raw: bytes) -> list[dict]:
    return [msgspec.json.decode(x) for x in raw.splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("missing_error")
    shutil.copy(ROOT / "tests" / "models" / SCRIPT, tmp / SCRIPT)
    env = user_env(PT2KIT_STORE=str(tmp / "store"))
    out = {"tmp": tmp}
    out["capture"] = subprocess.run([PY, "-m", "pt2kit.capture", "--", PY, SCRIPT], capture_output=True, cwd=tmp,
                                    env=env)
    out["kdiff"] = subprocess.run([PY, "-m", "pt2kit.kdiff"], input=out["capture"].stdout, capture_output=True,
                                  cwd=tmp, env=env)
    out["minify"] = subprocess.run([PY, "-m", "pt2kit.minify", "--no-bisect", "-o", "repro.py"],
                                   input=out["kdiff"].stdout, capture_output=True, cwd=tmp, env=env)
    out["repro"] = run_alone(tmp / "repro.py", env)
    # the same graph compiled by aot_eager, whose compiled side raises as eager does: what a fixed torch does
    text = (tmp / "repro.py").read_text()
    (tmp / "fixed.py").write_text(text.replace("\nBACKEND = 'inductor'\n", "\nBACKEND = 'aot_eager'\n"))
    out["fixed"] = run_alone(tmp / "fixed.py", env)
    return out


EAGER = "RuntimeError: addmv input tensors must have the same dtype, but got Float, Half, and Float"


def test_capture_keeps_the_graph_whose_eager_run_raises(runs):
    cap = runs["capture"]
    assert cap.returncode == 0, cap.stderr.decode()[-2000:]
    (model,) = [r for r in _records(cap.stdout) if r["kind"] == "model"]
    assert (model["captured"]["unrunnable"], model["captured"]["backend"]) == (EAGER, "inductor")


def test_kdiff_fails_the_graph_where_eager_raises_and_inductor_returns(runs):
    kd = runs["kdiff"]
    err = kd.stderr.decode()
    assert kd.returncode == 1, err[-3000:]
    assert "cannot judge" not in err
    assert f"mv_dtype_mismatch.py[0/0]: FAIL out (inductor vs eager): eager raises {EAGER}; inductor returns\n" in err
    (diff,) = [r for r in _records(kd.stdout) if r["kind"] == "diff"]
    assert (diff["output"], diff["passed"], diff["raised"]) == ("out", False, EAGER)


def test_minify_cuts_the_missing_error_to_the_op(runs):
    mn = runs["minify"]
    assert mn.returncode == 1, mn.stderr.decode()[-3000:]
    (rep,) = [r for r in _records(mn.stdout) if r["kind"] == "repro"]
    assert (rep["failure"], rep["signature"], rep["ops"], rep["reproduces"]) == (
        "missing-error", EAGER, ["aten.mv.default"], True)
    text = (runs["tmp"] / "repro.py").read_text()
    assert f"Failure: the compiled side returns where eager raises {EAGER}." in text


def test_the_repro_exits_1_while_compiled_returns_and_0_where_it_raises_as_eager(runs):
    alone = runs["repro"]
    assert (alone.returncode, alone.stdout) == (
        1, f"repro: the bug is present: missing-error: the compiled side returns where eager raises {EAGER}\n"), \
        alone.stderr[-2000:]
    fixed = runs["fixed"]
    assert (fixed.returncode, fixed.stdout) == (0, "repro: missing-error gone (raises as eager does): fixed\n"), \
        fixed.stderr[-2000:]
