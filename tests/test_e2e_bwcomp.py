"""A custom backend's backward (issue 44, item 7): a plain training loop compiled with its own
``aot_autograd(fw_compiler=..., bw_compiler=...)`` backend whose backward compiler makes relu's
gradient wrong (tests/models/bwbug_backend.py). Through the README pipeline, the backend handed over
with --backend: kdiff names threshold_backward in the backward graph (it said "the difference comes from
what the compiled forward saved": the backward graph was compiled as an inference graph, which reaches
only the forward compiler), and minify cuts it to a 1-op repro that fails alone.

One module fixture runs capture, kdiff and minify once; the tests read its results."""

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
pytestmark = pytest.mark.xdist_group("bwcomp")


def _records(raw: bytes) -> list[dict]:
    return [msgspec.json.decode(x) for x in raw.splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bwcomp")
    for f in ("bwbug_backend.py", "bwbug_train.py"):
        shutil.copy(ROOT / "tests" / "models" / f, tmp / f)
    env = user_env(PT2KIT_STORE=str(tmp / "store"))
    out = {}
    out["capture"] = subprocess.run([PY, "-m", "pt2kit.capture", "--", PY, "bwbug_train.py"], capture_output=True,
                                    cwd=tmp, env=env)
    out["kdiff"] = subprocess.run([PY, "-m", "pt2kit.kdiff", "--grad", "--backend", "bwbug_backend.py:backend"],
                                  input=out["capture"].stdout, capture_output=True, cwd=tmp, env=env)
    out["minify"] = subprocess.run([PY, "-m", "pt2kit.minify", "--no-bisect", "--backend", "bwbug_backend.py:backend",
                                    "-o", "repro.py"], input=out["kdiff"].stdout, capture_output=True, cwd=tmp, env=env)
    out["repro"] = run_alone(tmp / "repro.py", env)
    out["tmp"] = tmp
    return out


def test_kdiff_names_threshold_backward_that_the_backward_compiler_made(runs):
    assert runs["capture"].returncode == 0, runs["capture"].stderr.decode()[-2000:]
    # the backend the script imported is recorded where it was made, not as the script's (loading the
    # script to reach it would run its training loop)
    (model,) = [r for r in _records(runs["capture"].stdout) if r["kind"] == "model"]
    c = model["captured"]
    assert (c["backend_code"], c.get("backend_in_script", False)) == (f"{runs['tmp']}/bwbug_backend.py:backend", False)
    kd = runs["kdiff"]
    err = kd.stderr.decode()
    assert kd.returncode == 1, err[-3000:]
    recs = _records(kd.stdout)
    # the forward is bit-identical: only gradients fail
    diffs = {r["output"]: r["passed"] for r in recs if r["kind"] == "diff"}
    assert diffs["out[0]"] is True and diffs["grad.fn.0.weight"] is False, diffs
    (div,) = [r for r in recs if r["kind"] == "divergence"]
    assert (div["phase"], div["op"], div["node"], div["forward_op"]) == (
        "backward", "aten.threshold_backward.default", "threshold_backward", "aten.relu.default")
    assert ("first divergence: aten.threshold_backward.default (node threshold_backward, backward graph, the "
            "gradient of aten.relu.default)") in err
    assert "what the compiled forward saved" not in err


def test_minify_cuts_it_to_one_op_whose_repro_fails_alone(runs):
    mn = runs["minify"]
    err = mn.stderr.decode()
    assert mn.returncode == 1, err[-3000:]
    (rep,) = [r for r in _records(mn.stdout) if r["kind"] == "repro"]
    assert (rep["failure"], rep["ops"], rep["phase"]) == ("accuracy", ["aten.threshold_backward.default"], "backward")
    assert "1 ops (aten.threshold_backward.default)" in err
    alone = runs["repro"]
    assert alone.returncode == 1, alone.stdout + alone.stderr
    assert "bwbug_backend.py" in (runs["tmp"] / "repro.py").read_text()
