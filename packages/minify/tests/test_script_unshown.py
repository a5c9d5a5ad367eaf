"""A compile failure the script shows and its kept graph does not (issue 57: pytorch#181175, AOTAutograd
failing as Dynamo traced torch.func.grad under dynamic shapes; the graph, run again from its model file,
passes): minify said "asked for a compile-error failure, but MODEL shows none", exit 3, as if it had
crashed. The failure is the script's, so the script is reduced at the source level, and its repro fails
alone. scripts/dtype_state.py plants such a compiler: it reads the default dtype, state no graph records.

One module fixture runs capture and minify once (the reduction given 10 s); the tests read its results."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mntest import minify_in, run_repro

from pt2kit.testkit import module, run

SCRIPT = Path(__file__).parent / "scripts" / "dtype_state.py"
BACKEND = f"{SCRIPT}:refuses_float64_default"
SIG = "RuntimeError: planted: compiled under a float64 default dtype"
pytestmark = pytest.mark.xdist_group("script-unshown")


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    d = tmp_path_factory.mktemp("unshown")
    cap = run(module("pt2kit.capture", "--store", str(d / "store"), "--", sys.executable, str(SCRIPT)), cwd=d,
              timeout=300)
    assert cap.code == 1 and SIG in cap.stderr, cap.stderr
    r = minify_in(d, "--backend", BACKEND, "--timeout", "10", "--no-bisect", "-o", str(d / "repro.py"),
                  store=d / "store", stdin=cap.stdout, timeout=600)
    return r, d / "repro.py"


def test_a_compile_failure_its_graph_does_not_show_reduces_the_script(reduced):
    r, _ = reduced
    assert r.code == 1, r.stderr
    assert "dtype_state.py[0/0]: asked for a compile-error failure, but " in r.stderr
    assert ("the command failed, and its captured graph(s) do not show it when minify runs them "
            "(dtype_state.py[0/0]): the script itself is reduced") in r.stderr, r.stderr
    (rep,) = r.kind("repro")
    assert rep["signature"] == SIG and rep["reproduces"], rep


def test_its_repro_is_the_script_reduced_and_fails_alone(reduced, tmp_path):
    _, repro = reduced
    assert "# ---- the user's script, reduced ----" in repro.read_text()
    p = run_repro(repro)
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stderr.rstrip().endswith(f"repro: reproduced: {SIG}"), p.stderr
