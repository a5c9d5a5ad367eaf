"""Mixed precision as users write it, `with torch.autocast(...): loss = model(x)` around the compiled model
(tests/models/train_amp.py: bfloat16 autocast, and float16 nested inside bfloat16 with a GradScaler):
`pt2kit capture | kdiff | minify`. The autocast each graph was compiled under travels with its model
file (`autocast_state`, the record's `autocast`), and every tool calls the graph under it. Before, capture
found each model file "does not run here" (float32 outputs where the graph gave bfloat16) and kdiff said
"cannot judge", exit 2, on a healthy loop and on a planted bug alike."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from e2ekit import user_env

from pt2kit.testkit import run_alone

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "models" / "train_amp.py"
RELU = next(i for i, line in enumerate(SCRIPT.read_text().splitlines(), 1) if "torch.relu" in line)

pytestmark = pytest.mark.xdist_group("autocast")


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One capture of the loop, kdiff over both graphs, minify of the failing one (its repro alone)."""
    cwd = tmp_path_factory.mktemp("amp")
    env = user_env(PT2KIT_STORE=str(cwd / "store"))
    p = subprocess.run("pt2kit capture -- python " + str(SCRIPT) + " | kdiff | tee kdiff.ndjson | "
                       "minify --no-bisect -o repro.py > minify.ndjson; echo ${PIPESTATUS[@]}", shell=True, capture_output=True, text=True, cwd=cwd, env=env,
                       executable="/bin/bash", timeout=900)
    return cwd, env, p


def test_a_bf16_amp_training_loop_is_judged_and_passes(run):
    cwd, _, p = run
    assert p.stdout.split() == ["0", "1", "0", "1"], p.stderr[-3000:]  # the planted graph fails: nothing "cannot judge"
    assert "trained" in p.stderr and "does not run here" not in p.stderr
    assert ("capture: train_amp.py[0/0]: forward at " in p.stderr
            and "(inductor, grad, under torch.autocast(cpu, bfloat16)), 1 inputs" in p.stderr)
    models = {r["model"]: r for r in _records(cwd / "kdiff.ndjson") if r["kind"] == "model"}
    assert models["train_amp.py[0/0]"]["autocast"] == [{"device_type": "cpu", "dtype": "bfloat16"}]
    # the inner autocast of the nested pair is the one the planted graph was compiled (and guarded) under
    assert models["train_amp.py[0/1]"]["autocast"] == [{"device_type": "cpu", "dtype": "float16"}]
    healthy = [r for r in _records(cwd / "kdiff.ndjson") if r["kind"] == "diff" and r["model"] == "train_amp.py[0/0]"]
    assert len(healthy) == 5 and all(d["passed"] for d in healthy)  # the output and four gradients
    assert "kdiff: train_amp.py[0/0]: 5 of 5 leaves pass (inductor vs eager; " in p.stderr
    assert "every side under torch.autocast(cpu, bfloat16), as the model file says" in p.stderr


def test_a_planted_bug_under_fp16_autocast_is_found_at_its_op(run):
    cwd, _, p = run
    (div,) = [r for r in _records(cwd / "kdiff.ndjson") if r["kind"] == "divergence"]
    assert (div["model"], div["op"], div["source"]) == ("train_amp.py[0/1]", "aten.relu.default", f"{SCRIPT}:{RELU}")
    assert ("kdiff: train_amp.py[0/1]: 1 of 5 leaves pass (inductor vs eager; every side under "
            "torch.autocast(cpu, float16), as the model file says" in p.stderr)


def test_the_planted_bug_is_minified_to_a_repro_that_carries_the_autocast_and_fails_alone(run):
    cwd = run[0]
    (rep,) = [r for r in _records(cwd / "minify.ndjson") if r["kind"] == "repro"]
    assert (rep["model"], rep["ops"], rep["reproduced"]) == ("train_amp.py[0/1]", ["aten.relu.default"], 3), rep
    text = (cwd / "repro.py").read_text()
    # the short form (issue 58), its check entered inside the script's `with`: said, and the main's own `with`
    assert len(text.splitlines()) <= 150 and "def short_accuracy(" in text, len(text.splitlines())
    assert "Under: torch.autocast(cpu, float16) around the whole check (main's with), as the script called it." in text
    assert "\n        amp = [torch.autocast('cpu', dtype=torch.float16)]\n" in text
    assert "\n    with amp[0]:  # as the script called the graph\n" in text
    alone = run_alone(Path(cwd) / "repro.py", timeout=600)
    assert alone.returncode == 1 and alone.stdout.startswith("repro: the bug is present: accuracy"), alone.stderr
    fixed = Path(cwd) / "fixed.py"  # the planted bug off: it passes
    fixed.write_text(re.sub(r"^CONFIG = .*$", "CONFIG = {}", text, flags=re.M))
    alone = run_alone(fixed, timeout=600)
    assert alone.returncode == 0 and "fixed" in alone.stdout, alone.stdout + alone.stderr


def test_a_float64_reference_under_autocast_is_one_line_not_a_verdict(run):
    cwd, env, _ = run
    p = subprocess.run([sys.executable, "-m", "pt2kit.kdiff", "--ref", "eager64"], cwd=cwd, env=env,
                       input=(cwd / "kdiff.ndjson").read_text(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 2, p.stderr[-2000:]
    assert ("kdiff: error: train_amp.py[0/0]: --ref eager64 cannot judge a model called under torch.autocast(cpu, "
            "bfloat16) (as the script called it): autocast leaves a float64 copy in float64" in p.stderr)
    assert not [r for r in map(json.loads, p.stdout.splitlines()) if r["kind"] == "diff" and r["ref"] == "eager64"]
