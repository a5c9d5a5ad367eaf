"""A planted fault whose culprit is known, through the real pipeline, once: `pt2kit triage -- python
tests/bisect/post_grad_pass.py` (capture, guardscan, kdiff, minify with its bisection, reportgen, each the
tool it is), a script that sets `post_grad_custom_post_pass` to a pass corrupting one node at its top level.
Triage hands the pass to kdiff and minify (`--config post_grad_custom_post_pass=post_grad_pass.py:corrupt`,
said in one line); minify names the stage PyTorch's own `compiler_bisector run` names on the same script
(inductor, post_grad_passes, the application of post_grad_custom_post_pass: its number 8), and the two
`TORCH_BISECT_*` lines of the repro's docstring exit 1 and 0. Before, kdiff refused the stream's pass (exit
2) under triage, and minify handed it by hand exited 3 with a repro whose CONFIG was {} (the file's top level
left the pass on in its warm worker)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from e2ekit import user_env

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "bisect" / "post_grad_pass.py"

pytestmark = pytest.mark.xdist_group("bisect")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("bisect")
    env = user_env()
    for k in ("PT2KIT_STORE", "TORCH_COMPILE_BACKEND", "TORCH_BISECT_BACKEND", "TORCH_BISECT_SUBSYSTEM",
              "TORCH_BISECT_MAX"):
        env.pop(k, None)
    p = subprocess.run([sys.executable, "-m", "pt2kit.triage", "--out", "t", "--", sys.executable, str(SCRIPT)],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)
    records = [json.loads(x) for x in (cwd / "t" / "minify.ndjson").read_text().splitlines() if x.startswith("{")] \
        if (cwd / "t" / "minify.ndjson").is_file() else []
    return cwd / "t", p, env, records


def test_the_pass_is_handed_over_and_the_failure_reproduced(run):
    _, p, _, records = run
    assert p.returncode == 1, p.stderr[-4000:]
    assert f"triage hands it to kdiff and minify as --config post_grad_custom_post_pass={SCRIPT}:corrupt" in p.stderr
    repro = next(r for r in records if r["kind"] == "repro")
    assert repro["reproduced"] >= 1 and len(repro["ops"]) == 1, repro


def test_minify_names_the_stage_pytorchs_bisector_names(run):
    bisect = next(r for r in run[3] if r["kind"] == "bisect")
    assert (bisect["backend"], bisect["subsystem"], bisect["found"]) == ("inductor", "post_grad_passes", True), bisect
    assert bisect["what"] == "post_grad_custom_post_pass"
    assert bisect["off"]["fails"] is False and bisect["on"]["fails"] is True


def test_the_repros_bisect_lines_exit_1_then_0(run, tmp_path):
    folder, _, env, _ = run
    text = (folder / "repro.py").read_text()
    lines = re.findall(r"^    (TORCH_BISECT_\S+ TORCH_BISECT_\S+ TORCH_BISECT_MAX=\d+) python repro\.py  # (fails|passes)",
                       text, re.M)
    assert [said for _, said in lines] == ["fails", "passes"], text[:3000]
    (tmp_path / "repro.py").write_text(text)
    for words, said in lines:
        p = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                           env={**env, **dict(w.split("=", 1) for w in shlex.split(words))})
        assert p.returncode == (1 if said == "fails" else 0), f"{words}: {p.stdout}{p.stderr[-2000:]}"
