"""A script whose compiled code fails, down the README pipeline with no flags (issue 44, items 1 and 3):
`pt2kit capture -- python fails.py KIND | minify -o repro.py`, as a user types it, on the programs of
PyTorch's own minifier tests (packages/capture/tests/scripts/fails.py: relu is the bug). capture keeps
the graph whatever failed (Inductor's C++ build, a backend's code when called, a later call, AOT
Inductor's package when run), a `crash` record names it with the stage, and minify cuts it to the relu
that fails alone, as test/inductor/test_minifier.py and test/dynamo/test_minifier.py assert of
PyTorch's repro: the error's name in its output, exit 1. One module fixture runs every pipe."""

from __future__ import annotations

import subprocess
from pathlib import Path

import msgspec
import pytest
from e2ekit import user_env

from pt2kit.testkit import run_alone

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "packages" / "capture" / "tests" / "scripts" / "fails.py"
BACKWARD = ROOT / "packages" / "capture" / "tests" / "scripts" / "backward.py"
pytestmark = pytest.mark.xdist_group("compfail")
# name: (capture's arguments, the pipe after it ending in minify, or None where it ends at capture); a
# backend that is the script's code is handed over as the handover line says (the stream never imports it).
# minify runs with --no-bisect: no test here asserts a stage, and each bisection is ~12 compiles more
PIPES = {"compile": (f"-- python {SCRIPT} compile", "minify"), "run": (f"-- python {SCRIPT} backend-run", "minify"),
         "later": (f"-- python {SCRIPT} export later aoti-run", None),
         "backward": (f"-- python {BACKWARD} raise", f"minify --backend {BACKWARD}:raising"),
         "segv": (f"-- python {BACKWARD} segv", f"minify --backend {BACKWARD}:segv_backward"),
         "compile-segv": (f"-- python {BACKWARD} compile-segv", f"minify --backend {BACKWARD}:segv_compile"),
         "nan": (f"--check nan -- python {BACKWARD} nan",
                 f"kdiff --backend {BACKWARD}:nan_backward | minify --backend {BACKWARD}:nan_backward")}


@pytest.fixture(scope="module")
def pipes(tmp_path_factory):
    d = tmp_path_factory.mktemp("compfail")
    # the run's own environment, HOME too: the fork server forks a tool's workers only for the environment it
    # imported torch under, and a HOME of the test's own made every worker a fresh Python (217 s of CPU serially, 112 s so)
    env = user_env(PT2KIT_STORE=str(d / "store"))
    out = {}
    for name, (script, minify) in PIPES.items():  # script: capture's arguments
        then = f" | {minify} --no-bisect -o repro-{name}.py > minified-{name}.ndjson" if minify else ""
        p = subprocess.run(f"pt2kit capture {script} {d}/{name}.pt2 | tee {name}.ndjson{then}; "
                           "echo ${PIPESTATUS[@]}", shell=True, capture_output=True, cwd=d, executable="/bin/bash",
                           env=env)
        recs = [msgspec.json.decode(x) for x in (d / f"{name}.ndjson").read_bytes().splitlines()]
        out[name] = (p.stdout.decode().splitlines()[-1].split(), p.stderr.decode(), recs)
    kdiff = subprocess.run("kdiff < compile.ndjson", shell=True, capture_output=True, cwd=d, env=env)
    return d, env, out, kdiff


def run_minify(d: Path, env: dict, records: list[dict]) -> subprocess.CompletedProcess[bytes]:
    stream = b"".join(msgspec.json.encode(r) + b"\n" for r in records)
    return subprocess.run(["minify", "--no-bisect"], input=stream, capture_output=True, cwd=d, env=env, timeout=600)


def crashes(recs: list[dict], keys: tuple[str, ...] = ("model", "stage", "exception", "step")) -> list[dict]:
    return [{k: r.get(k) for k in keys} for r in recs if r["kind"] == "crash"]


def repro(d: Path, env: dict, name: str, phase: str | None = None) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """The ops of minify's repro record, and `python repro.py` run."""
    (rec,) = [r for r in map(msgspec.json.decode, (d / f"minified-{name}.ndjson").read_bytes().splitlines())
              if r["kind"] == "repro"]
    assert rec["output"] == f"repro-{name}.py" and rec["reproduces"], rec
    assert phase is None or rec["phase"] == phase, rec
    return rec["ops"], run_alone(d / rec["output"], env, timeout=600)


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
    from pt2kit.runtime.common.modelfile import load_model

    _, _, out, _ = pipes
    codes, err, recs = out["later"]
    assert codes == ["1", "0"], err[-3000:]
    assert "later: OverflowError" in err  # the script caught it (its stdout goes to capture's stderr)
    assert crashes(recs)[:3] == [
        {"model": "fails.py[0/0@step2]", "stage": "run", "exception": "OverflowError", "step": 2},
        {"model": "fails.py[aoti/0@step1]", "stage": "aoti-run", "exception": "RuntimeError", "step": 1},
        # the export the script caught: no graph, so no model; said, never "no graph was compiled" alone
        {"model": None, "stage": "export", "exception": "GuardOnDataDependentSymNode", "step": None},
    ]
    models = {r["model"]: r for r in recs if r["kind"] == "model"}
    assert sorted(models) == ["fails.py[0/0@step2]", "fails.py[0/0]", "fails.py[aoti/0@step1]", "fails.py[aoti/0]"]
    # the first call's inputs (ones) in the graph's model, the failing second call's (9.0) in its own
    assert float(load_model(models["fails.py[0/0]"]["file"]).inputs[0].max()) == 1.0
    assert float(load_model(models["fails.py[0/0@step2]"]["file"]).inputs[0].min()) == 9.0
    # AOT Inductor's package was called with 3.0s, not the export's example input
    assert float(load_model(models["fails.py[aoti/0@step1]"]["file"]).inputs[0].min()) == 3.0


def test_a_failing_torch_export_is_a_crash_naming_the_scripts_line_and_minify_says_it_has_no_graph(pipes):
    d, env, out, _ = pipes
    _, err, recs = out["later"]
    export = next(r for r in recs if r["kind"] == "crash" and r["stage"] == "export")
    line = next(i for i, t in enumerate(SCRIPT.read_text().splitlines(), 1) if "torch.export.export(Branchy()" in t)
    assert export["message"].startswith(f"torch.export.export raised at {SCRIPT}:{line}, before any graph existed: "
                                        "Could not guard on data-dependent expression"), export
    assert "capture: GuardOnDataDependentSymNode: torch.export.export raised at " in err
    # with the graphs that passed beside it, minify said "nothing to minify" (exit 0): now one line, exit 2
    passed = [r for r in recs if r["kind"] == "header" or (r["kind"] == "model" and "@" not in r["model"]
              and not r["captured"].get("error"))] + [export]
    m = run_minify(d, env, passed)
    assert m.returncode == 2, m.stderr.decode()[-2000:]
    assert m.stderr.decode().splitlines()[-1].startswith("minify: error: <stdin>:"), m.stderr.decode()[-2000:]
    assert "cannot minify it: a failing export has no graph to cut" in m.stderr.decode()


def test_an_error_in_the_compiled_backward_names_the_graph_the_step_and_keeps_that_steps_inputs(pipes):
    from pt2kit.runtime.common.modelfile import load_model

    d, env, out, _ = pipes
    codes, err, recs = out["backward"]
    # minify exited 0 "nothing to minify" before: the crash named no graph (loss.backward() raised it)
    assert codes == ["1", "0", "1"], err[-3000:]
    assert crashes(recs, ("model", "stage", "exception", "step", "phase")) == [
        {"model": "backward.py[0/0@step2]", "stage": "run", "exception": "OverflowError", "step": 2, "phase": "backward"},
        {"model": None, "stage": "run", "exception": "OverflowError", "step": None, "phase": None},  # the script's end
    ]
    assert "backward.py[0/0@step2]: its compiled code raised in its backward at call 2: OverflowError" in err
    # step 2's batch (scaled by 100) is its model's input, the one that makes the backward overflow
    model = next(r for r in recs if r["kind"] == "model" and r["model"] == "backward.py[0/0@step2]")
    assert model["train"] and float(load_model(model["file"]).inputs[0].max()) > 5
    ops, run = repro(d, env, "backward", phase="backward")
    assert ops == ["aten.threshold_backward.default"]  # relu's gradient, what the bw_compiler's code fails on
    assert run.returncode == 1 and "OverflowError" in run.stdout + run.stderr, (run.stdout + run.stderr)[-2000:]


def test_a_signal_in_the_compiled_backward_names_the_graph_and_is_minified_to_a_repro_that_dies_of_it(pipes):
    d, env, out, _ = pipes
    codes, err, recs = out["segv"]
    assert codes == ["139", "0", "1"], err[-3000:]  # the script's own exit: killed by SIGSEGV
    assert crashes(recs, ("model", "stage", "signal", "step", "phase")) == [
        {"model": "backward.py[0/0]", "stage": "run", "signal": "SIGSEGV", "step": 1, "phase": "backward"},
        {"model": None, "stage": "run", "signal": "SIGSEGV", "step": None, "phase": None},
    ]
    assert "backward.py[0/0]: killed by SIGSEGV in its compiled backward at call 1" in err
    ops, run = repro(d, env, "segv", phase="backward")
    assert ops == ["aten.threshold_backward.default"]
    assert run.returncode == 1 and "SIGSEGV" in run.stdout + run.stderr, (run.stdout + run.stderr)[-2000:]


def test_a_signal_while_the_backend_compiles_names_the_graph_and_is_minified_to_a_repro_that_dies_of_it(pipes):
    d, env, out, _ = pipes
    codes, err, recs = out["compile-segv"]
    # the graph's line came only once the compile returned: "no graph was compiled", minify had nothing
    assert codes == ["139", "0", "1"], err[-3000:]
    assert crashes(recs, ("model", "stage", "signal", "step")) == [
        {"model": "backward.py[0/0]", "stage": "compile", "signal": "SIGSEGV", "step": None},
        {"model": None, "stage": "run", "signal": "SIGSEGV", "step": None},
    ]
    assert "backward.py[0/0]: killed by SIGSEGV while its backend compiled it" in err
    ops, run = repro(d, env, "compile-segv")
    assert ops == ["aten.relu.default"]  # the forward graph the fw_compiler dies compiling
    assert run.returncode == 1 and "SIGSEGV" in run.stdout + run.stderr, (run.stdout + run.stderr)[-2000:]


def test_check_nan_catches_a_nan_only_in_the_gradients_at_step_2_and_minify_cuts_it_in_the_backward(pipes):
    from pt2kit.runtime.common.modelfile import load_model

    d, env, out, _ = pipes
    codes, err, recs = out["nan"]
    # the script ends well (its loss is NaN only at step 3, after the optimizer took step 2's NaN gradients)
    assert codes == ["0", "0", "1", "1"], err[-3000:]  # capture, tee, kdiff, minify
    assert not crashes(recs)
    model = next(r for r in recs if r["kind"] == "model" and r["model"] == "backward.py[0/0@step2]")
    assert model["captured"]["step"] == 2 and model["train"], model["captured"]
    assert model["captured"]["check"].startswith("nan: the gradient of input 0 (fn.0.weight): 128 of 128 values "
                                                 "non-finite (NaN or Inf) where eager's are finite"), model["captured"]
    assert float(load_model(model["file"]).inputs[0].max()) > 5  # step 2's batch, the one whose backward fails
    ops, run = repro(d, env, "nan", phase="backward")
    assert ops == ["aten.threshold_backward.default"]
    assert run.returncode == 1 and "nan" in (run.stdout + run.stderr).lower(), (run.stdout + run.stderr)[-2000:]


def test_check_nan_piped_straight_into_minify_is_minified_in_the_backward(pipes):
    """`pt2kit capture --check nan -- python backward.py nan | minify --backend ...`, no kdiff between: the
    model record whose captured.check failed is the failure. minify said "no failing diff, crash, violation
    or NaN/Inf kernel on stdin: nothing to minify" and exited 0."""
    d, env, _, _ = pipes
    m = subprocess.run(["minify", "--backend", f"{BACKWARD}:nan_backward", "--no-bisect", "-o", "repro-check.py"],
                       stdin=(d / "nan.ndjson").open("rb"), capture_output=True, cwd=d, env=env, timeout=600)
    err = m.stderr.decode()
    assert m.returncode == 1, err[-3000:]
    assert "minifying the nan failure of backward.py[0/0@step2]" in err, err[-3000:]
    (rec,) = [r for r in map(msgspec.json.decode, m.stdout.splitlines()) if r["kind"] == "repro"]
    assert rec["model"] == "backward.py[0/0@step2]" and rec["phase"] == "backward" and rec["reproduces"], rec
    assert rec["ops"] == ["aten.threshold_backward.default"]
    run = run_alone(d / "repro-check.py", env, timeout=600)
    assert run.returncode == 1 and "nan" in (run.stdout + run.stderr).lower(), (run.stdout + run.stderr)[-2000:]
