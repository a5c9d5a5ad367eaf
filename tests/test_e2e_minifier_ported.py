"""PyTorch's own minifier tests, ported: every CPU test of test/dynamo/test_minifier.py,
test/inductor/test_minifier.py, test/inductor/test_minifier_isolate.py and the AOT Inductor ones (the
versions of test_minifier.py that hold `_test_aoti`), each as the plain script the test builds
(tests/minifier/<name>.py: its program and the settings or backend it sets), run through the README
pipeline with no flag, `pt2kit capture -- python NAME.py | [kdiff |] minify -o repro.py` (kdiff where
the failure is accuracy), asserting what the PyTorch test asserts of its repro: it exits 1, its output
names the error (the accuracy failure for an AccuracyError), it holds the ops the test names; a program
with no bug gives no repro and minify exits 0.

A case the pipeline cannot pass yet is a strict xfail naming the gap (issue 44), so it flips when fixed.
`python benchmarks/bench_minifier_tests.py` runs PyTorch's own minifier on the same scripts for the count.
Each case is one capture and one minify (a module fixture keeps its run; its own xdist group).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "minifier"))
from ported_cases import CASES, Case, ops_ok, run_ours

XFAIL = {
}


def _param(case: Case):
    marks = [pytest.mark.xdist_group(f"minifier-ported-{case.name}")]
    if case.name in XFAIL:
        marks.append(pytest.mark.xfail(strict=True, reason=f"issue 44: {XFAIL[case.name]}"))
    return pytest.param(case, id=case.name, marks=marks)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    done: dict[str, dict] = {}

    def run(case: Case) -> dict:
        if case.name not in done:
            done[case.name] = run_ours(case, tmp_path_factory.mktemp(case.name))
        return done[case.name]

    return run


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_ported_minifier_case(case: Case, runs):
    row = runs(case)
    if case.error is None:
        assert row["ops"] is None, f"a repro of a program with no bug: {row['ops']}"
        assert row["rcs"][-1] == "0", f"minify exit {row['rcs'][-1]}: {row['stderr_tail']}"
        return
    assert row["ops"] is not None, f"no repro (exits {row['rcs']}): {row['stderr_tail']}"
    assert row["repro_rc"] == 1, f"python repro.py exit {row['repro_rc']}: {row['repro_line']}"
    assert row["named"], f"the repro's output does not name {case.error!r}: {row['repro_line']}"
    assert ops_ok(case, row["ops"]), f"repro ops {row['ops']}, the PyTorch test names {case.ops}"
    assert row["ok"]
