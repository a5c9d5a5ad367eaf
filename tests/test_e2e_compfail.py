"""A script whose compiled code fails, down the README pipeline with no flags (issue 44, items 1 and 3):
`pt2kit capture -- python fails.py KIND | minify -o repro.py`, as a user types it, on the programs of
PyTorch's own minifier tests (packages/capture/tests/scripts/fails.py: relu is the bug). capture keeps
the graph whatever failed (Inductor's C++ build, a backend's code when called, a later call, AOT
Inductor's package when run), a `crash` record names it with the stage, and minify cuts it to the relu
that fails alone, as test/inductor/test_minifier.py and test/dynamo/test_minifier.py assert of
PyTorch's repro: the error's name in its output, exit 1. One module fixture runs every pipe."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "packages" / "capture" / "tests" / "scripts" / "fails.py"
pytestmark = pytest.mark.xdist_group("compfail")
# name: (the script's kinds, whether the pipe goes on to minify)
PIPES = {"compile": ("compile", True), "run": ("backend-run", True), "later": ("later aoti-run", False)}


@pytest.fixture(scope="module")
def pipes(tmp_path_factory):
    d = tmp_path_factory.mktemp("compfail")
    bindir = Path(sys.executable).parent  # `python`, `pt2kit`, `minify` ... as the user's PATH finds them
    env = {"PT2KIT_STORE": str(d / "store"), "PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(d)}
    out = {}
    for name, (kinds, minify) in PIPES.items():
        then = f" | minify -o repro-{name}.py > minified-{name}.ndjson" if minify else ""
        p = subprocess.run(f"pt2kit capture -- python {SCRIPT} {kinds} {d}/{name}.pt2 | tee {name}.ndjson{then}; "
                           "echo ${PIPESTATUS[@]}", shell=True, capture_output=True, cwd=d, executable="/bin/bash",
                           env=env)
        recs = [msgspec.json.decode(x) for x in (d / f"{name}.ndjson").read_bytes().splitlines()]
        out[name] = (p.stdout.decode().splitlines()[-1].split(), p.stderr.decode(), recs)
    kdiff = subprocess.run("kdiff < compile.ndjson", shell=True, capture_output=True, cwd=d, env=env)
    return d, env, out, kdiff


def crashes(recs: list[dict]) -> list[dict]:
    return [{k: r.get(k) for k in ("model", "stage", "exception", "step")} for r in recs if r["kind"] == "crash"]


def repro(d: Path, env: dict, name: str) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """The ops of minify's repro record, and `python repro.py` run."""
    (rec,) = [r for r in map(msgspec.json.decode, (d / f"minified-{name}.ndjson").read_bytes().splitlines())
              if r["kind"] == "repro"]
    assert rec["output"] == f"repro-{name}.py" and rec["reproduces"], rec
    return rec["ops"], subprocess.run([sys.executable, rec["output"]], capture_output=True, text=True, cwd=d, env=env,
                                      timeout=600)


def test_a_cpp_compile_error_is_kept_named_and_minified_to_the_relu(pipes):
    d, env, out, kdiff = pipes
    codes, err, recs = out["compile"]
    # the script's exit and its traceback are its own; capture keeps the graph (it said "no graph was compiled")
    assert codes == ["1", "0", "1"], err[-3000:]
    assert "InductorError: CppCompileError: C++ compile error" in err
    (model,) = [r for r in recs if r["kind"] == "model"]
    assert model["model"] == "fails.py[0/0]" and model["captured"]["error"].startswith("CppCompileError")
    assert model["settings"] == {"inductor.cpp.inject_relu_bug_TESTING_ONLY": "compile_error"}
    assert crashes(recs)[0] == {"model": "fails.py[0/0]", "stage": "build", "exception": "CppCompileError", "step": None}
    # kdiff says the compiler crashed (README's Outcomes: exit 3), never a pass
    assert kdiff.returncode == 3, kdiff.stderr.decode()[-2000:]
    ops, run = repro(d, env, "compile")
    assert ops == ["aten.relu.default"]
    assert run.returncode == 1 and "CppCompileError" in run.stdout + run.stderr, (run.stdout + run.stderr)[-2000:]


def test_a_backend_whose_code_raises_when_called_is_named_and_minified_to_the_relu(pipes):
    d, env, out, _ = pipes
    codes, err, recs = out["run"]
    assert codes == ["1", "0", "1"], err[-3000:]  # minify exited 0 "nothing to minify": the crash named no graph
    assert "AssertionError: ReluRuntimeError" in err
    assert crashes(recs) == [
        {"model": "fails.py[0/0]", "stage": "run", "exception": "AssertionError", "step": 1},
        {"model": None, "stage": "run", "exception": "AssertionError", "step": None},  # the script's own end
    ]
    assert "fails.py[0/0]: its compiled code raised at call 1: AssertionError: ReluRuntimeError" in err
    ops, run = repro(d, env, "run")
    assert ops == ["torch.relu"]  # the graph Dynamo hands a backend: the one a Dynamo-level backend gets
    assert run.returncode == 1 and "ReluRuntimeError" in run.stdout + run.stderr, (run.stdout + run.stderr)[-2000:]


def test_a_later_failing_call_and_an_aoti_package_run_keep_the_inputs_of_the_call_that_raised(pipes):
    from pt2kit.runtime.modelfile import load_model

    _, _, out, _ = pipes
    codes, err, recs = out["later"]
    assert codes == ["1", "0"], err[-3000:]
    assert "later: OverflowError" in err  # the script caught it (its stdout goes to capture's stderr)
    assert crashes(recs)[:2] == [
        {"model": "fails.py[0/0@step2]", "stage": "run", "exception": "OverflowError", "step": 2},
        {"model": "fails.py[aoti/0@step1]", "stage": "aoti-run", "exception": "RuntimeError", "step": 1},
    ]
    models = {r["model"]: r for r in recs if r["kind"] == "model"}
    assert sorted(models) == ["fails.py[0/0@step2]", "fails.py[0/0]", "fails.py[aoti/0@step1]", "fails.py[aoti/0]"]
    # the first call's inputs (ones) in the graph's model, the failing second call's (9.0) in its own
    assert float(load_model(models["fails.py[0/0]"]["file"]).inputs[0].max()) == 1.0
    assert float(load_model(models["fails.py[0/0@step2]"]["file"]).inputs[0].min()) == 9.0
    # AOT Inductor's package was called with 3.0s, not the export's example input
    assert float(load_model(models["fails.py[aoti/0@step1]"]["file"]).inputs[0].min()) == 3.0
