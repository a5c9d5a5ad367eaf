"""A failure that shows only at a later call (issue 44, item 6): a training loop whose own backend's
softmax overflows once the logits have grown, at step 3 (tests/models/train_nan_step3.py). Capture alone
keeps each graph's first call, whose values pass: `capture | kdiff | minify` says nothing. With
`pt2kit capture --check nan` (or `accuracy`) every call is judged in the script's process, and the first
failing one's inputs (the weights as they were at step 3) become a record of their own, named
`[0/0@step3]`, which kdiff fails and minify cuts to a softmax that fails alone.

One module fixture runs the script under capture three ways (no check, nan, accuracy) and the pipeline
on the nan stream once; each test asserts on those runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from e2ekit import user_env

from pt2kit.testkit import run_alone

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SCRIPT = "train_nan_step3.py"

pytestmark = pytest.mark.xdist_group("check_step3")


def _env(tmp: Path) -> dict[str, str]:
    return user_env(PT2KIT_STORE=str(tmp / "store"))


def _records(raw: bytes) -> list[dict]:
    return [msgspec.json.decode(x) for x in raw.splitlines()]


def _models(raw: bytes) -> dict[str, dict]:
    return {r["model"]: r for r in _records(raw) if r["kind"] == "model"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("check")
    shutil.copy(ROOT / "tests" / "models" / SCRIPT, tmp / SCRIPT)
    backend = f"{tmp / SCRIPT}:naive_softmax"
    out = {"tmp": tmp, "backend": backend}
    for check in ("none", "nan", "accuracy"):
        flags = [] if check == "none" else ["--check", check]
        out[check] = subprocess.run([PY, "-m", "pt2kit.capture", *flags, "--out", f"{check}.ndjson", "--", PY, SCRIPT],
                                    capture_output=True, cwd=tmp, env=_env(tmp))
        out[check + ".stream"] = (tmp / f"{check}.ndjson").read_bytes()
    out["kdiff"] = subprocess.run([PY, "-m", "pt2kit.kdiff", "--backend", backend], input=out["nan.stream"],
                                  capture_output=True, cwd=tmp, env=_env(tmp))
    out["minify"] = subprocess.run([PY, "-m", "pt2kit.minify", "--no-bisect", "--backend", backend, "-o", "repro.py"],
                                   input=out["kdiff"].stdout, capture_output=True, cwd=tmp, env=_env(tmp))
    return out


def test_without_check_capture_keeps_only_the_first_call_whose_values_pass(runs):
    """The gap --check closes: the plain capture's one record holds step 1's values, byte for byte the
    same model file as the checked run's [0/0], which kdiff passes."""
    assert runs["none"].returncode == 0, runs["none"].stderr.decode()[-2000:]
    plain = _models(runs["none.stream"])
    assert list(plain) == [f"{SCRIPT}[0/0]"]
    checked = _models(runs["nan.stream"])
    assert plain[f"{SCRIPT}[0/0]"]["captured"]["code"]["sha256"] == checked[f"{SCRIPT}[0/0]"]["captured"]["code"]["sha256"]
    diffs = [d for d in _records(runs["kdiff"].stdout) if d["kind"] == "diff"]
    assert {d["passed"] for d in diffs if d["model"] == f"{SCRIPT}[0/0]"} == {True}


def test_check_keeps_the_first_failing_call_with_its_step_and_leaves_the_script_alone(runs):
    for check in ("nan", "accuracy"):
        cap = runs[check]
        err = cap.stderr.decode()
        assert cap.returncode == 0, err[-2000:]
        # the script's own output is what it printed without capture's check (its results unchanged)
        assert cap.stdout == runs["none"].stdout and b"step 3: max logit 90.0, probs finite False" in cap.stdout
        models = _models(runs[check + ".stream"])
        assert list(models) == [f"{SCRIPT}[0/0]", f"{SCRIPT}[0/0@step3]"]
        c = models[f"{SCRIPT}[0/0@step3]"]["captured"]
        assert c["step"] == 3 and c["check"].startswith(f"{check}: out[0]: "), c["check"]
        assert models[f"{SCRIPT}[0/0@step3]"]["train"] is True
        assert f"{SCRIPT}[0/0@step3]: forward at " in err and f"call 3 failed --check {check}: out[0]" in err
        assert "1 graph from 1 process; 1 failed --check (a record of the failing call's values each)" in err
    nan = _models(runs["nan.stream"])[f"{SCRIPT}[0/0@step3]"]["captured"]
    assert nan["check"] == "nan: out[0]: 16 of 16 values non-finite (NaN or Inf) where eager's are finite"
    # both checks kept the same call's values: the weights as step 3 got them (fc.bias 90, not 30)
    acc = _models(runs["accuracy.stream"])[f"{SCRIPT}[0/0@step3]"]["captured"]
    assert [t["sha256"] for t in acc["tensors"]] == [t["sha256"] for t in nan["tensors"]]
    first = _models(runs["nan.stream"])[f"{SCRIPT}[0/0]"]["captured"]
    assert set(t["sha256"] for t in nan["tensors"]) != set(t["sha256"] for t in first["tensors"])


def test_kdiff_fails_the_step_and_minify_writes_a_repro_that_fails_alone(runs):
    kd = runs["kdiff"]
    assert kd.returncode == 1, kd.stderr.decode()[-3000:]
    failing = {d["model"] for d in _records(kd.stdout) if d["kind"] == "diff" and not d["passed"]}
    assert failing == {f"{SCRIPT}[0/0@step3]"}
    mn = runs["minify"]
    assert mn.returncode == 1, mn.stderr.decode()[-3000:]
    (rep,) = [r for r in _records(mn.stdout) if r["kind"] == "repro"]
    assert rep["model"] == f"{SCRIPT}[0/0@step3]" and rep["ops"] == ["torch.softmax"]
    alone = run_alone(runs["tmp"] / "repro.py")
    assert alone.returncode == 1 and alone.stdout.startswith("repro: the bug is present"), alone.stdout + alone.stderr


def test_check_takes_nan_or_accuracy_only():
    bad = subprocess.run([PY, "-m", "pt2kit.capture", "--check", "grad", "--", PY, "-c", "pass"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "--check" in bad.stderr and "grad" in bad.stderr
