"""A compiler crash whose kept graph does not run here (issue 57: pytorch#186807, a custom op the script
registers inside @nested_compile_region): the graph's model file calls an op only the script defines, so
minify could not judge it and stopped, "cannot judge: the captured graph does not run here", exit 2, with the
script's failure there to reduce. The script is reduced at the source level instead, and its repro fails
alone. scripts/custom_op.py plants the compiler: it refuses a graph holding the script's custom op.

One module fixture runs capture and minify once (the reduction given 10 s); the tests read its results."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mntest import minify_in, run_repro

from pt2kit.testkit import module, run

SCRIPT = Path(__file__).parent / "scripts" / "custom_op.py"
SIG = "RuntimeError: planted: a custom op in the graph"
pytestmark = pytest.mark.xdist_group("script-unrunnable")


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    d = tmp_path_factory.mktemp("unrunnable")
    cap = run(module("pt2kit.capture", "--store", str(d / "store"), "--", sys.executable, str(SCRIPT)), cwd=d,
              timeout=300)
    assert cap.code == 1 and "the captured graph does not run here" in cap.stderr, cap.stderr
    r = minify_in(d, "--backend", f"{SCRIPT}:refuses_custom_ops", "--timeout", "10", "--no-bisect",
                  "-o", str(d / "repro.py"), store=d / "store", stdin=cap.stdout, timeout=600)
    return r, d / "repro.py"


def test_a_crash_whose_graph_does_not_run_here_reduces_the_script(reduced):
    r, _ = reduced
    assert r.code == 1, r.stderr
    assert "minify: error:" not in r.stderr, r.stderr
    assert ("the command failed, and its captured graph(s) do not run here (custom_op.py[0/0]: cannot judge: the "
            "captured graph does not run here: AttributeError: ") in r.stderr, r.stderr
    (rep,) = r.kind("repro")
    assert rep["signature"] == SIG and rep["reproduces"], rep


def test_its_repro_is_the_script_reduced_and_fails_alone(reduced):
    _, repro = reduced
    text = repro.read_text()
    assert "# ---- the user's script, reduced ----" in text and "planted::twice" in text, text
    p = run_repro(repro)
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stderr.rstrip().endswith(f"repro: reproduced: {SIG}"), p.stderr


def test_its_docstring_says_where_the_kept_graph_failed_not_before_any_graph(reduced):
    """Issue 57 (pytorch#186807): the repro said the script "fails before torch.compile hands a backend any
    graph (Dynamo raises while it traces)", where capture had kept the graph and its compile raised. The
    sentence follows what the stream recorded: the kept graph, where it failed, and why it was not cut."""
    _, repro = reduced
    text = repro.read_text()
    assert ("It still fails under torch.compile, as the backend compiles a graph Dynamo handed it\n(custom_op.py[0/0], "
            "which capture kept; its model file does not run alone), with:\n") in text, text[:1500]
    assert "before torch.compile hands" not in text
