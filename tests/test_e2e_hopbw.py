"""A higher-order op's backward that fails to compile (issue 57, class 6): a while_loop compiled whole
(``fullgraph=True``) and differentiated, whose backward graph Inductor refuses (tests/models/hopbw_pass.py,
a planted post-grad pass standing in for torch 2.11's stride check on the backward while_loop,
pytorch/pytorch#183017). fullgraph gave the script's compile leave to trace data-dependent ops; the model
file, compiled without it, traced the loop's backward into an error Dynamo turns into a graph break, ran
eagerly, and minify said "asked for a compile-error failure, but ... shows none" (exit 3). capture now
records that leave as the settings that give it, so minify reaches a repro that fails alone.

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
pytestmark = pytest.mark.xdist_group("hopbw")
PLANTED = "RuntimeError: planted: backward graph calls while_loop (while_loop)"


def _records(raw: bytes) -> list[dict]:
    return [msgspec.json.decode(x) for x in raw.splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hopbw")
    for f in ("hopbw_pass.py", "hopbw_train.py"):
        shutil.copy(ROOT / "tests" / "models" / f, tmp / f)
    env = user_env(PT2KIT_STORE=str(tmp / "store"))
    out = {"tmp": tmp}
    out["capture"] = subprocess.run([PY, "-m", "pt2kit.capture", "--", PY, "hopbw_train.py"], capture_output=True,
                                    cwd=tmp, env=env)
    # a stream never makes minify import code: the pass the script installed is handed over
    out["minify"] = subprocess.run([PY, "-m", "pt2kit.minify", "--no-bisect", "-o", "repro.py", "--config",
                                    "post_grad_custom_post_pass=hopbw_pass.py:reject_while_loop_backward"],
                                   input=out["capture"].stdout, capture_output=True, cwd=tmp, env=env)
    out["repro"] = run_alone(tmp / "repro.py", env)
    return out


def test_capture_records_what_fullgraph_let_the_compile_trace(runs):
    cap = runs["capture"]
    assert cap.returncode == 1, cap.stderr.decode()[-2000:]
    recs = _records(cap.stdout)
    (model,) = [r for r in recs if r["kind"] == "model"]
    assert model["settings"] == {"dynamo.capture_scalar_outputs": "True",
                                 "dynamo.capture_dynamic_output_shape_ops": "True"}
    (crash,) = [r for r in recs if r["kind"] == "crash" and r.get("model")]
    assert (crash["phase"], f"{crash['exception']}: {crash['message']}") == ("backward", PLANTED)


def test_minify_reaches_a_repro_of_the_backward_while_loop_that_fails_alone(runs):
    mn = runs["minify"]
    err = mn.stderr.decode()
    assert mn.returncode == 1, err[-3000:]
    (rep,) = [r for r in _records(mn.stdout) if r["kind"] == "repro"]
    assert (rep["failure"], rep["signature"], rep["reproduces"]) == ("compile-error", PLANTED, True)
    assert "higher_order.while_loop" in rep["ops"]
    assert rep["config"]["dynamo.capture_scalar_outputs"] == "True"  # the search kept it: the failure needs it
    alone = runs["repro"]
    assert alone.returncode == 1, alone.stdout + alone.stderr[-2000:]
    assert alone.stdout.startswith(f"repro: the bug is present: compile-error: {PLANTED}")
