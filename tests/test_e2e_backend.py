"""The backend a script compiled with travels with its record where that is safe (issue 44, item 2):
a name torch registers is what `| minify` and `| kdiff` test and what the repro compiles with; the
script's own backend function is code, which a stream never hands over: kdiff says which backend and the
--backend to give, exit 2, never a silent Inductor run; given it, kdiff finds the bug. A third-party
backend installed through torch's entry points is taken by its name."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
from e2ekit import user_env

from pt2kit.testkit import run_alone

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def _env(tmp_path, **extra):
    return user_env(PT2KIT_STORE=str(tmp_path / "store"), **extra)


def _capture(tmp_path, script):
    shutil.copy(ROOT / "tests" / "models" / script, tmp_path / script)
    cap = subprocess.run([PY, "-m", "pt2kit.capture", "--out", "cap.ndjson", "--", PY, script], capture_output=True,
                         text=True, cwd=tmp_path, env=_env(tmp_path))
    return cap, (tmp_path / "cap.ndjson").read_bytes()


def _records(raw):
    return [msgspec.json.decode(x) for x in raw.splitlines()]


def test_a_registered_testing_only_backend_travels_to_minify_and_its_repro(tmp_path):
    cap, stream = _capture(tmp_path, "backend_registered.py")
    assert cap.returncode == 1, cap.stderr[-2000:]  # the script dies of its backend's ReluCompileError
    (model,) = [r for r in _records(stream) if r["kind"] == "model"]
    assert model["captured"]["backend"] == "relu_compile_error_TESTING_ONLY" and "backend_code" not in model["captured"]
    # no flag: minify compiles with the script's backend (it tested Inductor: "shows none", exit 3)
    mn = subprocess.run([PY, "-m", "pt2kit.minify", "--no-bisect", "-o", "repro.py"], input=stream, capture_output=True,
                        cwd=tmp_path, env=_env(tmp_path))
    err = mn.stderr.decode()
    assert mn.returncode == 1, err[-3000:]
    assert "(backend relu_compile_error_TESTING_ONLY)" in err
    (rep,) = [r for r in _records(mn.stdout) if r["kind"] == "repro"]
    assert (rep["failure"], rep["backend"], rep["ops"]) == ("compile-error", "relu_compile_error_TESTING_ONLY",
                                                           ["torch.relu"])
    text = (tmp_path / "repro.py").read_text()
    assert "BACKEND = 'relu_compile_error_TESTING_ONLY'" in text
    alone = run_alone(tmp_path / "repro.py")
    assert alone.returncode == 1 and "ReluCompileError" in alone.stdout, alone.stdout + alone.stderr


def test_a_script_backend_function_is_named_with_the_flag_that_hands_it_over(tmp_path):
    cap, stream = _capture(tmp_path, "backend_function.py")
    assert cap.returncode == 0, cap.stderr[-2000:]
    script = tmp_path / "backend_function.py"
    (model,) = [r for r in _records(stream) if r["kind"] == "model"]
    c = model["captured"]
    assert (c["backend"], c["backend_code"], c["backend_in_script"]) == ("my_backend", f"{script}:my_backend", True)
    kd = subprocess.run([PY, "-m", "pt2kit.kdiff"], input=stream, capture_output=True, cwd=tmp_path, env=_env(tmp_path))
    assert kd.returncode == 2 and kd.stderr.decode() == (
        f"kdiff: error: <stdin>:2: backend_function.py[0/0] was compiled with the script's own backend my_backend "
        f"(defined in the script, {script}): a stream never makes kdiff import code; to test it, give "
        f"--backend {script}:my_backend\n")
    assert not [r for r in _records(kd.stdout) if r["kind"] == "diff"]  # no Inductor run in its place
    # `capture | kdiff | minify` as typed: minify said "nothing to minify", exit 0, after kdiff's refusal
    mn = subprocess.run([PY, "-m", "pt2kit.minify", "--no-bisect"], input=kd.stdout, capture_output=True, cwd=tmp_path,
                        env=_env(tmp_path))
    assert mn.returncode == 2 and mn.stderr.decode() == (
        "minify: error: <stdin>:4: the step before minify stopped, so nothing on stdin was judged and there is "
        "nothing to minify yet: <stdin>:2: backend_function.py[0/0] was compiled with the script's own backend "
        f"my_backend (defined in the script, {script}): a stream never makes kdiff import code; to test it, give "
        f"--backend {script}:my_backend\n"), mn.stderr.decode()
    # given that flag, kdiff tests the script's backend and finds its bug at the relu
    kd = subprocess.run([PY, "-m", "pt2kit.kdiff", "--backend", f"{script}:my_backend"], input=stream,
                        capture_output=True, cwd=tmp_path, env=_env(tmp_path))
    assert kd.returncode == 1, kd.stderr.decode()[-3000:]
    recs = _records(kd.stdout)
    (diff,) = [r for r in recs if r["kind"] == "diff"]
    assert not diff["passed"] and diff["test"] == f"{script}:my_backend"
    (div,) = [r for r in recs if r["kind"] == "divergence"]
    assert div["op"] == "aten.relu.default"


def test_a_third_party_backend_installed_through_torch_entry_points_is_taken_by_name(tmp_path):
    """A dist installed on the path (its dist-info names a torch_dynamo_backends entry point) whose backend
    doubles every output: kdiff --backend NAME runs it, so the outputs fail."""
    site = tmp_path / "site"
    (site / "doubler-0.1.dist-info").mkdir(parents=True)
    (site / "doubler-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: doubler\nVersion: 0.1\n")
    (site / "doubler-0.1.dist-info" / "entry_points.txt").write_text(
        "[torch_dynamo_backends]\ndoubler_backend = doubler:backend\n")
    (site / "doubler.py").write_text(
        "def backend(gm, example_inputs):\n"
        "    def run(*args):\n"
        "        return tuple(o * 2 for o in gm(*args))\n"
        "    return run\n")
    model = ROOT / "packages" / "kdiff" / "tests" / "models" / "mlp.py"
    kd = subprocess.run([PY, "-m", "pt2kit.kdiff", str(model), "--backend", "doubler_backend", "--no-localize"],
                        capture_output=True, cwd=tmp_path, env=_env(tmp_path, PYTHONPATH=str(site)))
    assert kd.returncode == 1, kd.stderr.decode()[-3000:]
    diffs = [r for r in _records(kd.stdout) if r["kind"] == "diff"]
    assert diffs and {(d["test"], d["passed"]) for d in diffs} == {("doubler_backend", False)}


def test_inductor_options_travel_as_the_settings_the_script_compiled_under(tmp_path):
    """torch.compile(options={"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}): `| kdiff` with no flag
    compiles under that option and fails at the relu (it ran plain Inductor: '1 of 1 leaves pass')."""
    cap, stream = _capture(tmp_path, "backend_options.py")
    assert cap.returncode == 0, cap.stderr[-2000:]
    (model,) = [r for r in _records(stream) if r["kind"] == "model"]
    assert model["captured"]["options"] == {"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'"}
    kd = subprocess.run([PY, "-m", "pt2kit.kdiff"], input=stream, capture_output=True, cwd=tmp_path, env=_env(tmp_path))
    assert kd.returncode == 1, kd.stderr.decode()[-3000:]
    recs = _records(kd.stdout)
    assert [(d["test"], d["passed"]) for d in recs if d["kind"] == "diff"] == [("inductor", False)]
    (div,) = [r for r in recs if r["kind"] == "divergence"]
    assert div["op"] == "aten.relu.default"


def test_the_backend_a_diff_compiled_with_is_the_one_minify_cuts_with(tmp_path):
    # `kdiff m.py --backend NAME | minify`: minify ran its own Inductor compile of the model, which passes, and
    # said "nothing to minify", exit 0; it now compiles with what the failing diff did
    model = tmp_path / "m.py"  # the backend turns torch.relu calls into adds
    model.write_text("import torch\n\n\ndef model(x):\n    return torch.cos(torch.relu(torch.sin(x)))\n\n\n"
                     "example_inputs = (torch.randn(20, 20),)\n")
    kd = subprocess.run([PY, "-m", "pt2kit.kdiff", str(model), "--backend", "relu_accuracy_error_TESTING_ONLY",
                         "--no-localize"], capture_output=True, cwd=tmp_path, env=_env(tmp_path))
    assert kd.returncode == 1, kd.stderr.decode()[-2000:]
    mn = subprocess.run([PY, "-m", "pt2kit.minify", "--no-bisect", "-o", "repro.py"], input=kd.stdout,
                        capture_output=True, cwd=tmp_path, env=_env(tmp_path))
    err = mn.stderr.decode()
    assert mn.returncode == 1 and "(backend relu_accuracy_error_TESTING_ONLY)" in err, err[-3000:]
    (rep,) = [r for r in _records(mn.stdout) if r["kind"] == "repro"]
    assert (rep["failure"], rep["backend"], rep["nodes_after"]) == ("accuracy", "relu_accuracy_error_TESTING_ONLY", 1)
    alone = run_alone(tmp_path / "repro.py")
    assert alone.returncode == 1, alone.stdout + alone.stderr
