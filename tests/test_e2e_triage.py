"""`pt2kit triage -- python examples/train.py --planted-bug`, the README's first thing to try on a failing
script, run once as written (a training script under Inductor's planted relu bug) and its folder checked: the
page leads with the failure, repro.py fails alone, bug-report.md names the failure, the op and the user's
line, holds the repro, the bisection (or says it has none), the versions and each step's command, and a
command it prints runs as printed. test_e2e_readme leaves this line to this module: one shared run."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from e2ekit import user_env

from pt2kit.reportgen import md_text
from pt2kit.testkit import run_alone

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "pt2kit triage -- python examples/train.py --planted-bug"
MAX_LINES = 150  # a 1-op accuracy repro (issue 58: 1,595, 781, 525, 396, 351, 319; 128 in the short form)

pytestmark = pytest.mark.xdist_group("triage")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("triage")
    shutil.copytree(ROOT / "examples", cwd / "examples")
    # `python` and the tools: this interpreter's (a nox session's venv puts them first on PATH too)
    env = user_env()
    env.pop("PT2KIT_STORE", None)
    p = subprocess.run(shlex.split(COMMAND), cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)
    return cwd, p, env


def test_the_readme_says_to_run_it_first():
    assert f"    {COMMAND}\n" in (ROOT / "README.md").read_text()


def test_it_finds_the_bug_and_keeps_the_scripts_output(run):
    cwd, p, _ = run
    assert p.returncode == 1, p.stderr[-4000:]  # a failure reproduced
    assert re.fullmatch(r"step 3: loss \d+\.\d+\n", p.stdout)  # the script's stdout, untouched
    for n, step in enumerate(["capture", "guardscan", "kdiff", "minify", "reportgen"], 1):
        assert f"triage: [{n}] {step}: " in p.stderr  # every step said, with its command
    folder = cwd / "triage-1"
    assert {"report.html", "repro.py", "bug-report.md", "capture.ndjson", "guardscan.ndjson", "kdiff.ndjson",
            "minify.ndjson", "reportgen.ndjson", "store"} <= {x.name for x in folder.iterdir()}


def test_the_page_leads_with_the_failure(run):
    page = (run[0] / "triage-1" / "report.html").read_text()
    fails = page.index("What fails")
    assert fails < page.index("aten.relu.default") and "train.py[0/0]" in page
    # "where" leads with the user's own line, as they would type it; the store's captured-graph line after it
    where = re.search(r'<tr class="fails">(?:<td>.*?</td>){2}<td>(.*?)</td>', page, re.S)[1]
    assert where.startswith('<code class="mine">examples/train.py:32</code> ') and "/blobs/" in where, where


def test_the_repro_fails_alone_and_passes_once_the_bug_is_gone(run, tmp_path):
    repro = tmp_path / "repro.py"
    shutil.copy(run[0] / "triage-1" / "repro.py", repro)  # no store, no stream beside it
    text = repro.read_text()
    # issue 58: 1,595 lines, five whole files embedded; now the graph first, then its inputs, then the short
    # form's check: PyTorch's own accuracy rule (torch._dynamo.utils.same) and the code it reaches, by source
    assert len(text.splitlines()) <= MAX_LINES, len(text.splitlines())
    assert text.index("class Repro(") < text.index("INPUTS = ") < text.index("# ---- the check") \
        < text.index('if __name__ == "__main__":')
    p = run_alone(tmp_path / "repro.py", timeout=600)
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.startswith("repro: the bug is present: accuracy: output 0 fails torch._dynamo.utils.same")
    repro.write_text(re.sub(r"^CONFIG = .*$", "CONFIG = {}", text, count=1, flags=re.M))  # the planted bug off
    p = run_alone(tmp_path / "repro.py", timeout=600)
    assert p.returncode == 0 and "fixed" in p.stdout, p.stdout + p.stderr


def test_the_bug_report(run):
    cwd, p, _ = run
    md = (cwd / "triage-1" / "bug-report.md").read_text()
    # line 32 is `model(x)`, the call of the compiled code (the divergence's line is the captured graph's)
    assert md.splitlines()[0] == ("# [inductor] wrong results in aten.relu.default called at examples/train.py:32 "
                                  "(train.py\\[0/0\\])")  # record text, escaped
    assert ("  - in your code: `examples/train.py:32` (the call of the compiled code; the op's own line is not known)"
            in md.splitlines())
    assert "fail against the reference \\(out\\[0\\]" in md
    assert len(md) < 65_536  # GitHub's limit on an issue body: the file is what one pastes
    repro = (cwd / "triage-1" / "repro.py").read_text()
    assert f"```python\n{repro.rstrip()}\n```" in md  # the whole repro, inline
    assert "relu = torch.ops.aten.relu.default(" in md
    assert f"PyTorch version: {torch.__version__}\n" in md and f"Python version: {sys.version.split()[0]}" in md
    assert "inductor.cpp.inject_relu_bug_TESTING_ONLY = accuracy" in md
    stream = [json.loads(x) for x in (cwd / "triage-1" / "minify.ndjson").read_text().splitlines()]
    bisect = [r for r in stream if r["kind"] == "bisect"]
    if bisect:  # minify's answer, and the two runs that check it
        assert f"#### Bisection\n\n- {md_text(bisect[0]['verdict'])}\n" in md
        if bisect[0].get("off"):
            assert f"  - checked, culprit off: `{bisect[0]['off']['setting']}` passes" in md
    else:
        assert "#### Bisection\n\nNot bisected" in md
    for step in ("capture", "guardscan", "kdiff", "minify", "reportgen"):
        printed = re.search(rf"triage: \[\d\] {step}: (.*)", p.stderr)[1]
        assert f"{printed}   # exit " in md  # the command said is the command written
    # docs/triage-example.md shows one whole, made by this command: its title and sections are this run's
    shown = _markdown_block(ROOT / "docs" / "triage-example.md")
    assert len(shown) < 65_536 and shown.splitlines()[0] == md.splitlines()[0]
    assert [ln for ln in shown.splitlines() if re.match(r"#{3,4} ", ln)] == \
        [ln for ln in md.splitlines() if re.match(r"#{3,4} ", ln)]
    # the guide shows its head: each of those lines is this run's, in order (a line may be left out)
    head, lines = _markdown_block(ROOT / "README.md").splitlines(), iter(md.splitlines())
    assert len(head) >= 10 and all(ln in lines for ln in head), head
    # and its commands to rerun each step, as this run wrote them
    rerun = re.search(r"^### How to rerun each step\n.*?\n```sh\n(.*?)\n```$", md, re.M | re.S)[1]
    assert f"```sh\n{rerun}\n```" in (ROOT / "README.md").read_text()


def _markdown_block(path: Path) -> str:
    """The bug report a doc shows: its ````markdown block starting with the title line."""
    return re.search(r"^(`{4,})markdown\n(# \[inductor\].*?)\n\1$", path.read_text(), re.M | re.S)[2]


def test_a_printed_command_runs_as_printed(run, tmp_path):
    cwd, p, env = run
    printed = re.search(r"triage: \[2\] guardscan: (.*)", p.stderr)[1]
    assert printed == "guardscan --store triage-1/store < triage-1/capture.ndjson > triage-1/guardscan.ndjson"
    again = subprocess.run(printed.replace("> triage-1/guardscan.ndjson", f"> {tmp_path}/again.ndjson"), shell=True,
                           cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == int(re.search(r"triage: guardscan: exit (\d+)", p.stderr)[1]), again.stderr
    ours = [json.loads(x) for x in (cwd / "triage-1" / "guardscan.ndjson").read_text().splitlines()]
    theirs = [json.loads(x) for x in (tmp_path / "again.ndjson").read_text().splitlines()]
    assert [r["kind"] for r in ours] == [r["kind"] for r in theirs]
    argv = [next(r["argv"] for r in s if r["kind"] == "header" and r["tool"] == "guardscan") for s in (ours, theirs)]
    assert argv == [["guardscan", "--store", "triage-1/store"]] * 2  # triage ran what it printed
