"""A failure before any graph was kept (Dynamo refusing a fullgraph=True compile, on torch itself): minify
reduces the user's script at the source level, and the reduced script is the repro: smaller, failing
alone with the same exception, passing once the offending construct is gone."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from mntest import minify_in, run_repro

from pt2kit.testkit import module, run

SCRIPT = Path(__file__).parent / "scripts" / "refused.py"


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """``pt2kit capture -- python refused.py | minify --timeout 45 -o repro.py``, once for the tests below.
    Each candidate is forked from the run's fork server (a Dynamo trace, ~0.4 s): the whole reduction is ~600
    candidates, minutes on 2 cores; 45 s of it (~60 candidates) cuts what the assertions below name, and the rest is the
    reducer's own search, not ours."""
    d = tmp_path_factory.mktemp("script")
    cap = run(module("pt2kit.capture", "--store", str(d / "store"), "--", sys.executable, str(SCRIPT)), cwd=d,
              timeout=300)
    assert cap.code == 1 and "Unsupported" in cap.stderr, cap.stderr
    r = minify_in(d, "--timeout", "45", "-o", str(d / "repro.py"), store=d / "store", stdin=cap.stdout,
                  timeout=600)
    return r, (d / "repro.py").read_text() if (d / "repro.py").exists() else ""


@pytest.mark.xdist_group("script-reduced")
def test_a_refused_fullgraph_compile_is_reduced_keeping_its_failure(reduced, tmp_path):
    r, text = reduced
    assert r.code == 1, r.stderr
    assert re.search(r"minify: refused.py: reduced from \d+ to \d+ lines in \d+ runs, .*repro.py fails so in 2 of 2 "
                     r"fresh runs", r.stderr), r.stderr
    (rep,) = r.kind("repro")
    assert rep["signature"] == "Unsupported: Failed to trace builtin operator" and rep["reproduced"] == 2
    assert "the user's script reduced at the source level" in text and "Unsupported: Failed to trace" in text
    user = text.split("# ---- the user's script, reduced ----\n")[1]
    original = [ln for ln in SCRIPT.read_text().splitlines() if ln.strip()]
    # the setup that has nothing to do with it goes first (the json summary, the loss); within the test's
    # 45 s the rest is cut as far as time allows
    # how far it gets is the reducer's time on this machine: smaller, with the lines named below gone
    assert len([ln for ln in user.splitlines() if ln.strip()]) < len(original), user
    assert "json" not in user and "mse_loss" not in user and "fullgraph=True" in user and "print(" in user, user


@pytest.mark.xdist_group("script-reduced")
def test_the_reduced_script_fails_alone_and_passes_without_fullgraph(reduced, tmp_path):
    _, text = reduced
    out = tmp_path / "repro.py"
    out.write_text(text)
    p = run_repro(out)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "torch._dynamo.exc.Unsupported" in p.stderr
    assert p.stderr.rstrip().endswith("repro: reproduced: Unsupported: Failed to trace builtin operator"), p.stderr
    out.write_text(text.replace("fullgraph=True", "fullgraph=False"))  # the graph break allowed: it runs through
    p = run_repro(out)
    assert p.returncode == 0, p.stdout + p.stderr
