"""A compiled process killed by a signal where eager raises (issue 57, class 4): an int64 division by zero
that eager refuses with RuntimeError ZeroDivisionError and Inductor's C++ kernel performs, SIGFPE
(tests/models/sigfpe_trunc.py, real on torch 2.13). capture names the crash; minify took "eager raises"
for a model file that does not run ("cannot judge", exit 2). The signal where eager raises is the
failure's signature: minify cuts it to the one op, and the repro runs the graph in a child, exit 1 while
the child dies so, 0 where the compiled side raises as eager does.

One module fixture runs capture, minify and the repro once; the tests read its results."""

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
pytestmark = pytest.mark.xdist_group("signal")
PRESENT = ("repro: the bug is present: the process died with SIGFPE where eager raises "
           "RuntimeError: ZeroDivisionError\n")


def _records(raw: bytes) -> list[dict]:
    return [msgspec.json.decode(x) for x in raw.splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("signal")
    shutil.copy(ROOT / "tests" / "models" / "sigfpe_trunc.py", tmp / "sigfpe_trunc.py")
    env = user_env(PT2KIT_STORE=str(tmp / "store"))
    out = {"tmp": tmp}
    out["capture"] = subprocess.run([PY, "-m", "pt2kit.capture", "--", PY, "sigfpe_trunc.py"], capture_output=True,
                                    cwd=tmp, env=env)
    out["minify"] = subprocess.run([PY, "-m", "pt2kit.minify", "--no-bisect", "-o", "repro.py"],
                                   input=out["capture"].stdout, capture_output=True, cwd=tmp, env=env)
    out["repro"] = run_alone(tmp / "repro.py", env)
    # the same graph compiled by aot_eager, whose compiled side raises as eager does: what a fixed torch does
    text = (tmp / "repro.py").read_text()
    (tmp / "fixed.py").write_text(text.replace("\nBACKEND = 'inductor'\n", "\nBACKEND = 'aot_eager'\n"))
    out["fixed"] = subprocess.run([PY, "fixed.py"], capture_output=True, text=True, cwd=tmp, env=env)
    return out


def test_capture_names_the_signal_of_the_compiled_forward(runs):
    cap = runs["capture"]
    assert cap.returncode == 136, cap.stderr.decode()[-2000:]
    crash = [r for r in _records(cap.stdout) if r["kind"] == "crash" and r.get("model")]
    assert [(c["signal"], c["phase"]) for c in crash] == [("SIGFPE", "forward")]


def test_minify_keeps_the_signal_where_eager_raises_and_cuts_to_the_division(runs):
    mn = runs["minify"]
    err = mn.stderr.decode()
    assert mn.returncode == 1, err[-3000:]
    assert "cannot judge" not in err
    (rep,) = [r for r in _records(mn.stdout) if r["kind"] == "repro"]
    assert (rep["failure"], rep["signature"], rep["ops"], rep["reproduces"]) == (
        "crash", "SIGFPE", ["aten.div.Tensor_mode"], True)
    text = (runs["tmp"] / "repro.py").read_text()
    assert "Failure: the process dies with SIGFPE where eager raises RuntimeError: ZeroDivisionError." in text


def test_the_repro_exits_1_alone_while_the_child_dies_and_0_where_compiled_raises_as_eager(runs):
    alone = runs["repro"]
    assert (alone.returncode, alone.stdout) == (1, PRESENT), alone.stderr[-2000:]
    fixed = runs["fixed"]
    assert (fixed.returncode, fixed.stdout) == (0, "repro: crash gone (the process ended with exit 0): fixed\n"), fixed.stderr[-2000:]
