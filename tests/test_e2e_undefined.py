"""Outputs whose values no op defined (issue 57: the script of pytorch#184405 returns torch.empty(2), and
kdiff flagged it, a false finding). tests/models/uninitialised.py returns torch.empty_like's memory and a view
of torch.empty's beside a sum, compiled correctly by Inductor: eager and compiled hold different garbage there
(Inductor hands empty_like the buffer the matmul wrote and freed). kdiff compares their shape and dtype, not
their values, and says so once; minify finds nothing to minify (it cut the graph to aten.empty_like and wrote
a repro that "reproduced 3 of 3"). A torch.empty filled whole is defined, and compared. An op's random-number
generator state (an output its schema names philox_offset, issue 59) is compared the same way, and named for
what it is, not as uninitialised memory.

One module fixture runs kdiff and minify on the model file once (minify's compile reads kdiff's from
Inductor's cache); the tests read their results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from e2ekit import user_env

MODEL = Path(__file__).resolve().parent / "models" / "uninitialised.py"
PY = sys.executable
pytestmark = pytest.mark.xdist_group("undefined")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("undefined")
    env = user_env(PT2KIT_STORE=str(tmp / "store"))
    kdiff = subprocess.run([PY, "-m", "pt2kit.kdiff", str(MODEL), "--backend", "inductor"], capture_output=True,
                           cwd=tmp, env=env)
    minify = subprocess.run([PY, "-m", "pt2kit.minify", str(MODEL), "--no-bisect", "-o", "repro.py"],
                            capture_output=True, cwd=tmp, env=env)
    return {"tmp": tmp, "kdiff": kdiff, "minify": minify}


def test_kdiff_compares_the_shape_of_uninitialised_memory_not_its_values_and_says_so_once(runs):
    r = runs["kdiff"]
    err = r.stderr.decode()
    assert r.returncode == 0, err
    diffs = {d["output"]: d for d in map(msgspec.json.decode, r.stdout.splitlines()) if d["kind"] == "diff"}
    assert {n: (d["passed"], d.get("rule")) for n, d in diffs.items()} == {
        "out[0]": (True, "fp64"), "out[1]": (True, "undefined"), "out[2]": (True, "undefined"),
        "out[3]": (True, "fp64"), "out[4]": (True, "undefined")}, diffs
    assert diffs["out[1]"]["note"] == ("its values are uninitialised memory (aten.empty_like): shape and dtype "
                                       "compared, not values")
    assert diffs["out[2]"]["shape"] == [3, 4] and "(aten.empty)" in diffs["out[2]"]["note"]
    assert diffs["out[3]"]["metrics"]["numel"] == 5  # filled whole: its values are compared
    assert diffs["out[4]"]["note"] == ("its values are random-number generator state (pt2kit_e2e.draw.default's "
                                       "philox_offset): shape and dtype compared, not values")
    line = ("uninitialised.py: out[1], out[2]: uninitialised memory (aten.empty, aten.empty_like left the values "
            "undefined); out[4]: random-number generator state (pt2kit_e2e.draw.default's philox_offset): shape and "
            "dtype compared, not values")
    assert err.count(line) == 1, err
    assert "uninitialised.py: 5 of 5 leaves pass (inductor vs eager;" in err


def test_minify_finds_no_failure_in_uninitialised_memory(runs):
    r = runs["minify"]
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert err.rstrip().endswith(f"uninitialised.py: no failure to minify: {MODEL} runs the same eagerly and with "
                                 "inductor"), err
    assert not (runs["tmp"] / "repro.py").exists()
