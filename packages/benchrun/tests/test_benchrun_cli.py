"""benchrun as a user runs it: the numbers in each `bench` record hold together and agree with
PyTorch's own counts, failures of every kind end in the right record and exit code, and the sweep
goes on past them."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from brtest import MODELS

SMALL = MODELS / "small.py"
RELU_BUG = "cpp.inject_relu_bug_TESTING_ONLY"


def _one(r, backend):
    (b,) = [x for x in r.kind("bench") if x["backend"] == backend]
    return b


def test_a_sweep_times_eager_against_inductor(benchrun, tmp_path):
    r = benchrun(f"{SMALL}:mlp", "--backend", "eager,inductor", "--repeat", "12", "--profile-kernels")
    assert r.code == 0, r.stderr
    kinds = [x["kind"] for x in r.records]
    assert kinds == ["header", "model", "bench", "bench"]
    b = _one(r, "inductor")
    assert b["model"] == "small.py:mlp" and b["device"] == "cpu" and b["timer"] == "wall" and b["mode"] == "infer"
    for side in (b["eager"], b["latency"]):
        assert side["n"] == 12 and side["min"] <= side["p10"] <= side["median"] <= side["p90"] <= side["max"]
        assert side["iqr"] >= 0
    assert b["speedup"] == pytest.approx(b["eager"]["median"] / b["latency"]["median"])
    assert b["speedup_lo"] <= b["speedup"] <= b["speedup_hi"]
    cold, warm = b["compile_cold"], b["compile_warm"]
    assert b["compile_s"] == cold["total_s"]
    assert cold["dynamo_s"] > 0 and cold["inductor_s"] > 0 and cold["first_run_s"] >= 0
    assert cold["dynamo_s"] + cold["aot_s"] + cold["inductor_s"] <= cold["total_s"]
    # the warm process found the cold one's cache: hits, no misses, and a shorter compile
    assert cold["cache_misses"] >= 1 and warm["cache_hits"] >= 1 and warm["cache_misses"] == 0
    assert warm["total_s"] < cold["total_s"]
    assert b["graphs"] == 1 and b["breaks"] == 0 and b["recompiles"] == 0 and b["kernels"] >= 1
    assert b["accuracy"] == "pass" and "memory" not in b  # no allocator statistics on a CPU
    # --profile-kernels on a CPU: Inductor's C++ kernels by name, the whole table in the store
    names = [k["name"] for k in b["top_kernels"]]
    assert any("cpp_fused_relu" in n for n in names) and all("Wrapper" not in n for n in names), names
    table = msgspec.json.decode((tmp_path / "store" / b["kernel_table"]["path"]).read_bytes())
    assert sum(row["share"] for row in table) == pytest.approx(1.0)
    e = _one(r, "eager")
    assert "compile_cold" not in e and e["accuracy"] == "pass"
    assert "small.py:mlp × inductor:" in r.stderr and "speedup [95% CI]" in r.stderr


@pytest.mark.parametrize(("name", "counts"), [("breaks", (2, 1)), ("helper_breaks", (1, 0))])
def test_graph_and_break_counts_are_torch_dynamo_explains(benchrun, name, counts):
    """helper_breaks, a print in a helper called in a loop: explain counts 1 graph and 0 breaks, where
    benchrun said 1 break (Dynamo's graph_break counter also counts a break in a frame Dynamo skipped)."""
    import torch

    from pt2kit.runtime.common.modelfile import load_model

    loaded = load_model(f"{SMALL}:{name}")
    explained = torch._dynamo.explain(loaded.model)(*loaded.inputs)
    r = benchrun(f"{SMALL}:{name}", "--backend", "aot_eager", "--repeat", "5", "--no-accuracy")
    assert r.code == 0, r.stderr
    b = _one(r, "aot_eager")
    assert (b["graphs"], b["breaks"]) == (explained.graph_count, explained.graph_break_count) == counts
    assert "accuracy" not in b


def test_a_wrong_result_is_fail_accuracy_and_exit_1(benchrun):
    r = benchrun(f"{SMALL}:mlp", "--config", f"{RELU_BUG}=accuracy", "--repeat", "5")
    assert r.code == 1, r.stderr
    b = _one(r, "inductor")
    assert b["accuracy"] == "fail_accuracy" and b["accuracy_note"].startswith("out: ")
    assert "RMSE vs float64" in b["accuracy_note"] and "accuracy fail_accuracy" in r.stderr
    assert r.kind("header")[0]["precision"] == "harness"


def test_as_configured_precision_never_passes_a_planted_bug(benchrun):
    # the model's own settings differ from the harness's (fallback_random): judged again under the
    # harness's, the planted relu still fails
    r = benchrun(f"{SMALL}:mlp", "--precision", "as-configured", "--config", f"{RELU_BUG}=accuracy", "--repeat", "5")
    assert r.code == 1, r.stderr
    assert r.kind("header")[0]["precision"] == "as-configured"
    b = _one(r, "inductor")
    assert b["accuracy"] == "fail_accuracy" and b["accuracy_note"].startswith("out: ")


def test_a_backend_that_raises_is_fail_to_run_and_exit_3(benchrun):
    r = benchrun(f"{SMALL}:mlp", "--backend", f"eager,{SMALL}:raising_backend", "--repeat", "5")
    assert r.code == 3, r.stderr
    b = _one(r, f"{SMALL}:raising_backend")
    assert b["accuracy"] == "fail_to_run" and "cannot compile anything" in b["error"]
    assert _one(r, "eager")["accuracy"] == "pass"
    assert "FAIL TO RUN" in r.stderr


def test_a_crash_and_a_hang_in_the_middle_of_a_sweep(benchrun):
    r = benchrun(f"{SMALL}:mlp", f"{SMALL}:segfault", f"{SMALL}:hang", f"{SMALL}:dropout_mlp",
                 "--backend", "eager", "--repeat", "3", "--no-accuracy", "--timeout", "20")
    assert r.code == 3, r.stderr
    got = [(x["kind"], x["model"]) for x in r.records if x["kind"] in ("bench", "crash")]
    assert got == [("bench", "small.py:mlp"), ("crash", "small.py:segfault"), ("crash", "small.py:hang"),
                   ("bench", "small.py:dropout_mlp")]
    seg, hang = r.kind("crash")
    assert seg["signal"] == "SIGSEGV" and seg["stage"] == "eager: first call" and seg["backend"] == "eager"
    assert hang["message"].startswith("timed out after 20s during eager: first call") and hang["wall_s"] >= 20
    assert "small.py:hang × eager: TIMEOUT" in r.stderr and "small.py:segfault × eager: CRASH" in r.stderr


def test_train_mode_with_dropout_passes_accuracy(benchrun):
    r = benchrun(f"{SMALL}:dropout_mlp", "--mode", "train", "--repeat", "5")
    assert r.code == 0, r.stderr
    b = _one(r, "inductor")
    assert b["mode"] == "train" and b["accuracy"] == "pass" and b["latency"]["n"] == 5
    assert b["graphs"] == 1 and b["compile_cold"]["total_s"] > 0


def _jobs(records):
    return [(x["model"], x["backend"]) for x in records if x["kind"] in ("bench", "crash")]


def test_shards_balanced_by_durations_together_hold_each_job_once(benchrun, tmp_path):
    # 3 jobs, each a child process of its own: eager alone (aot_eager's 3 more jobs, each run twice, cost
    # half the test and show nothing more about shards; LPT's balance itself: test_plan.py)
    args = [f"{SMALL}:mlp", f"{SMALL}:breaks", f"{SMALL}:dropout_mlp", "--backend", "eager",
            "--repeat", "3", "--no-accuracy"]
    full = benchrun(*args)
    assert full.code == 0, full.stderr
    whole = tmp_path / "whole.ndjson"
    whole.write_bytes(full.stdout)
    parts = [benchrun(*args, "--shard", f"{i}/2", "--durations", str(whole)) for i in (1, 2)]
    assert all(p.code == 0 for p in parts), [p.stderr for p in parts]
    assert all("balanced by --durations" in p.stderr for p in parts)
    a, b = _jobs(parts[0].records), _jobs(parts[1].records)
    assert a and b and not set(a) & set(b)
    assert sorted(a + b) == sorted(_jobs(full.records)) and len(_jobs(full.records)) == 3
    # each shard's first job of a model writes that model's record: cat gives every model once per shard
    for p in parts:
        assert sorted(m["model"] for m in p.kind("model")) == sorted({m for m, _ in _jobs(p.records)})


def test_model_records_on_stdin(benchrun):
    model = {"kind": "model", "v": 1, "run": "up", "model": "small.py:mlp", "file": str(SMALL), "entry": "mlp",
             "device": "cpu"}
    line = msgspec.json.encode(model) + b"\n"
    r = benchrun("--backend", "eager", "--repeat", "3", "--no-accuracy", stdin=line)
    assert r.code == 0, r.stderr
    assert r.stdout.splitlines()[0] == line.strip()  # forwarded first, byte for byte
    assert [x["kind"] for x in r.records] == ["model", "header", "bench"]


@pytest.mark.parametrize("args, message", [
    (["nope.py"], "nope.py: no such model file"),
    (["zoo:nope"], "zoo:nope: no such zoo model"),
    ([f"{SMALL}:mlp", "--backend", "nope"], "--backend nope: expected eager, aot_eager, inductor"),
    ([f"{SMALL}:mlp", "--backend", "inductor:fastest"], "inductor's modes are"),
    ([f"{SMALL}:mlp", "--shard", "3/2"], "--shard 3/2: expected I/N"),
    ([f"{SMALL}:mlp", "--timer", "events"], "--timer events: needs a CUDA device"),
    ([f"{SMALL}:mlp", "--durations", "x.ndjson"], "--durations: only balances --shard"),
    ([f"{SMALL}:mlp", "--timeout", "0"], "--timeout 0.0: expected a finite number > 0"),
    ([f"{SMALL}:mlp", "--ray-address", "auto"], "--ray-address: give --executor ray too"),
    ([f"{SMALL}:mlp", "--repeat", "10000000000000"], "--repeat 10000000000000: expected from 3 to 10000"),
    ([f"{SMALL}:mlp", "--repeat", "2"], "--repeat 2: expected from 3 to 10000"),
    ([f"{SMALL}:mlp", "--warmup", "-1"], "--warmup -1: expected from 0 to 10000"),
    ([f"{SMALL}:mlp", "--warmup", "10001"], "--warmup 10001: expected from 0 to 10000"),
    ([f"{SMALL}:mlp", "--seed", "999999999999999999999999999"], "--seed 999999999999999999999999999: expected a seed"),
    ([f"{SMALL}:mlp", "--timeout", "1e300"], "--timeout 1e+300: expected a finite number > 0 and <= 604800"),
])
def test_bad_input_is_one_line_and_exit_2(benchrun, args, message):
    r = benchrun(*args)
    assert r.code == 2 and r.stdout == b"", r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_train_mode_on_a_model_with_nothing_to_train_is_exit_2(benchrun):
    r = benchrun(f"{SMALL}:integers", "--mode", "train", "--backend", "eager")
    assert r.code == 2, r.stderr
    assert r.stderr.splitlines()[-1] == (
        "benchrun: error: small.py:integers: --mode train: the model is a module with no parameter that requires grad "
        "and no input requires grad, so a training step has no gradient to take (make the inputs that should be "
        "trained with requires_grad=True)")
    assert [x["kind"] for x in r.records] == ["header", "error"]


def test_the_zoo_lists_model_files_that_exist(benchrun):
    r = benchrun("--zoo")
    assert r.code == 0, r.stderr
    names = [ln.split()[0] for ln in r.stdout.decode().splitlines() if ln.startswith("zoo:")]
    assert names == ["zoo:bert_base", "zoo:gpt2_small", "zoo:resnet18", "zoo:ssm_loop"]
    paths = [Path(ln.strip()) for ln in r.stdout.decode().splitlines() if not ln.startswith("zoo:")]
    assert len(paths) == 4 and all(p.is_file() for p in paths)


def test_the_ssm_loop_from_the_zoo_runs_eagerly(benchrun):
    r = benchrun("zoo:ssm_loop", "--backend", "eager", "--repeat", "3")
    assert r.code == 0, r.stderr
    b = _one(r, "eager")
    assert b["model"] == "ssm_loop.py" and b["accuracy"] == "pass" and b["latency"]["median"] > 0


def test_help_imports_neither_torch_nor_ray():
    code = ("import sys; sys.argv = ['benchrun', '--help']\nfrom pt2kit.benchrun.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "assert 'torch' not in sys.modules and 'ray' not in sys.modules, 'heavy import'")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "--fail-below" in p.stdout and "Exit codes" in p.stdout


def test_speedup_interval_is_the_bootstrap_of_the_samples():
    from pt2kit.benchrun.latency import quantile, speedup_interval, summary

    eager = [10.0 + 0.1 * (i % 7) for i in range(50)]
    test = [5.0 + 0.05 * (i % 5) for i in range(50)]
    s, lo, hi = speedup_interval(eager, test)
    assert s == pytest.approx(statistics.median(eager) / statistics.median(test))
    assert lo <= s <= hi and hi - lo < 0.1
    assert speedup_interval(eager, test) == (s, lo, hi)  # seeded: the same samples, the same interval
    xs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    import numpy

    assert [quantile(xs, q) for q in (0.1, 0.25, 0.5, 0.75, 0.9)] == pytest.approx(
        list(numpy.percentile(xs, [10, 25, 50, 75, 90])))
    assert summary(xs)["iqr"] == pytest.approx(quantile(xs, 0.75) - quantile(xs, 0.25))
    assert math.isnan(quantile([], 0.5))


def test_a_stream_naming_a_link_to_a_non_py_file_runs_nothing(benchrun, tmp_path):
    made = tmp_path / "made"
    evil = tmp_path / "evil.txt"
    evil.write_text(f"open({str(made)!r}, 'w').close()\nimport torch\nmodel = torch.nn.ReLU()\n"
                    "example_inputs = (torch.ones(2),)\n")
    (tmp_path / "sneaky.py").symlink_to(evil)
    model = {"kind": "model", "v": 1, "run": "up", "model": "sneaky.py", "file": str(tmp_path / "sneaky.py"),
             "device": "cpu"}
    r = benchrun("--backend", "eager", "--repeat", "3", "--no-accuracy", stdin=msgspec.json.encode(model) + b"\n")
    assert r.code == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        f"benchrun: error: <stdin>:1: the model record names {tmp_path / 'sneaky.py'} (which resolves to {evil}), "
        "not a .py file: a stream runs only Python source")
    assert not made.exists()
