"""kdiff as a user runs it: real torch.compile and Inductor, the records and the exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from kdtest import MODELS

CASES = MODELS / "cases.py"


def test_clean_model_passes_with_named_leaves(kdiff):
    r = kdiff(str(MODELS / "mlp.py"))
    assert r.code == 0, r.stderr
    d = r.kind("diff")
    assert [x["output"] for x in d] == ["out['logits']", "out['hidden'][0]", "out['hidden'][1]"]
    assert all(x["passed"] for x in d) and r.kind("divergence") == []
    assert d[0]["atol"] == 1e-5 and d[0]["rtol"] == 1.3e-6 and d[0]["ref"] == "eager" and d[0]["test"] == "inductor"


def test_corrupting_backend_fails_with_exact_index_and_values(kdiff, tmp_path):
    from pt2kit.schema import BlobRef, Store

    r = kdiff(f"{CASES}:small", "--backend", f"{CASES}:corrupt_one", "--no-localize")
    assert r.code == 1
    (d,) = r.kind("diff")
    assert d["passed"] is False and d["worst_index"] == [1, 2]
    assert d["worst_ref"] == 22.0 and d["worst_test"] == 42.0  # x[1, 2] = 7 -> 7 * 3 + 1
    assert d["metrics"]["mismatches"] == 1 and d["metrics"]["max_abs"] == 20.0
    png = Store(tmp_path / "store").read(BlobRef(**d["heatmap"]))
    assert png.startswith(b"\x89PNG") and d["heatmap"]["media_type"] == "image/png"
    assert "FAIL out" in r.stderr and "at [1, 2]: ref 22.0 test 42.0" in r.stderr


def test_relative_error_near_1000_passes_under_default_rtol(kdiff):
    r = kdiff(f"{CASES}:big_values", "--backend", f"{CASES}:scale_1e6")
    assert r.code == 0, r.stderr
    (d,) = r.kind("diff")
    assert d["passed"] and d["metrics"]["max_abs"] > 0  # a real difference, inside atol + rtol * |ref|


def test_nan_on_both_sides_agrees_unless_no_equal_nan(kdiff):
    r = kdiff(f"{CASES}:nans", "--backend", "aot_eager", "--no-localize", "--no-equal-nan")
    assert r.code == 1
    (d,) = r.kind("diff")
    assert d["metrics"]["nan_ref"] == 2 and d["metrics"]["nan_test"] == 2 and d["worst_index"] == [1]
    assert kdiff(f"{CASES}:nans", "--backend", "aot_eager").code == 0


def test_a_head_that_makes_nan_passes_and_points_at_aotiprint(kdiff):
    # log(h + 0.5) is NaN wherever h < -0.5, eagerly and compiled alike: agreement, not a divergence
    r = kdiff(f"{CASES}:log_head")
    assert r.code == 0, r.stderr
    (d,) = r.kind("diff")
    assert d["passed"] and d["equal_nan"] and d["metrics"]["nan_ref"] == d["metrics"]["nan_test"] == 9
    assert d["note"].startswith("the reference holds 9 NaN and the test the same: the model itself makes them")
    assert "`aotiprint --jit MODEL.py` names the op" in r.stderr and r.kind("divergence") == []


def test_each_side_starts_from_the_inputs_as_given_those_sharing_a_storage_sharing_it(kdiff):
    # the eager side's write into a reached the compiled side's run, which read a[1] as 1 where eager read 0:
    # "0 of 1 leaves pass" on a graph Inductor compiles right (issue 44, item 4: views of one storage)
    r = kdiff(str(MODELS / "aliased.py"), "--no-localize")
    assert r.code == 0, r.stderr
    diffs = {d["output"]: d for d in r.kind("diff")}
    assert sorted(diffs) == ["out", "written.inputs[0]", "written.inputs[1]"]  # the write, seen through both inputs
    for d in diffs.values():
        assert d["passed"] and d["metrics"]["mismatches"] == 0 and d["metrics"]["max_abs"] == 0.0, d
    assert "aliased.py: 3 of 3 leaves pass (inductor vs eager; 2 written in place" in r.stderr


def test_eager_backward_failing_is_bad_input_after_the_forward_verdict(kdiff):
    r = kdiff(str(MODELS / "noautograd.py"), "--grad")
    assert r.code == 2, r.stderr
    assert [(d["output"], d["passed"]) for d in r.kind("diff")] == [("out", True)]  # the forward verdict stands
    (line,) = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert line == ("kdiff: error: noautograd.py: outputs: 1 of 1 leaves pass; gradients: the model's own eager backward "
                    "fails, so there are none to compare (the model, not the compiler): RuntimeError: Trying to backward "
                    "through pt2kit_kdiff_test.scale.default but no autograd formula was registered. Please use "
                    "register_autograd to add one.")
    assert "Traceback" not in r.stderr


def test_float64_difference_of_1e9_fails_at_zero_tolerance(kdiff):
    r = kdiff(f"{CASES}:float64", "--backend", f"{CASES}:add_1e9", "--atol", "0", "--rtol", "0", "--no-localize")
    assert r.code == 1
    (d,) = r.kind("diff")
    assert d["dtype"] == "float64" and d["worst_index"] == [3]
    assert abs(d["metrics"]["max_abs"] - 1e-9) < 1e-15  # compared in float64, never downcast
    assert kdiff(f"{CASES}:float64", "--backend", f"{CASES}:add_1e9").code == 0  # inside float64's default atol 1e-7


def test_planted_relu_bug_is_localised_to_the_relu_and_its_line(kdiff):
    r = kdiff(str(MODELS / "mlp.py"), "--config", "cpp.inject_relu_bug_TESTING_ONLY=accuracy")
    assert r.code == 1
    (v,) = r.kind("divergence")
    assert v["op"] == "aten.relu.default" and v["node"] == "relu"
    assert v["source"] == f"{MODELS / 'mlp.py'}:13" and v["code"] == "h = torch.relu(h)  # line 13"
    assert v["compiles"] >= 1 and v["metrics"]["mismatches"] > 0
    assert [x["passed"] for x in r.kind("diff")] == [False, False, False]


def test_a_divergence_masked_away_before_the_output_is_not_the_one_named(kdiff):
    """PyTorch's test_accuracy_vs_strict_accuracy: log1p and relu both add 1, but log1p feeds only the
    mask of where(b, r, r); the wrong output comes from the relu, which is named (was log1p, the first
    divergence in graph order), and the log1p is said not to reach the failing output."""
    r = kdiff(f"{CASES}:masked", "--backend", f"{CASES}:plus_one_relu_log1p")
    assert r.code == 1, r.stderr
    (v,) = r.kind("divergence")
    assert v["op"] == "aten.relu.default" and v["code"] == "r = torch.relu(x)", v
    assert "an earlier divergence, node log1p (aten.log1p.default), does not reach a failing output" in r.stderr


def test_eager64_reference_is_quiet_on_a_clean_model_and_still_finds_the_bug(kdiff):
    assert kdiff(str(MODELS / "mlp.py"), "--ref", "eager64").code == 0
    r = kdiff(str(MODELS / "mlp.py"), "--ref", "eager64", "--config", "cpp.inject_relu_bug_TESTING_ONLY=accuracy")
    assert r.code == 1 and r.kind("divergence")[0]["op"] == "aten.relu.default"
    assert r.kind("diff")[0]["ref"] == "eager64"


def test_gradients(kdiff):
    r = kdiff(str(MODELS / "mlp.py"), "--grad", "--no-localize")
    names = [x["output"] for x in r.kind("diff")]
    assert "grad.fc1.weight" in names and "grad.inputs[0]" in names and r.code == 0


def test_legacy_weight_norm_gradients_are_judged_by_the_float64_rule(kdiff):
    """A vocoder-style conv stack with legacy weight_norm: after eager's backward each conv's `weight` is a
    non-leaf attribute torch will not deepcopy, so the float64 copy for the gradients' verdict crashed
    (exit 3, 'Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol')."""
    r = kdiff(str(MODELS / "weightnorm.py"), "--grad", "--backend", "aot_eager", "--no-localize")
    assert r.code == 0, r.stderr
    grads = {x["output"]: x["passed"] for x in r.kind("diff") if x["output"].startswith("grad.")}
    assert grads == {f"grad.{n}": True for n in ("pre.bias", "pre.weight_g", "pre.weight_v", "up.bias",
                                                  "up.weight_g", "up.weight_v", "inputs[0]")}
    assert "fails" not in r.stderr  # the float64 rule judged them: no 'float64 ... fails', no assert_close fallback


def test_fxcheck_model_record_on_stdin_is_diffed_and_lines_forwarded(kdiff, tmp_path):
    import io

    from pt2kit.schema import Model
    from pt2kit.schema.stream import RecordWriter

    buf = io.BytesIO()
    w = RecordWriter(buf, run="upstream")
    w.forward(b'{"kind":"future_kind","v":1,"run":"upstream"}')
    w.emit_new(Model, model="cases.py:small", file=str(CASES), entry="small", device="cpu")
    r = kdiff("--backend", f"{CASES}:corrupt_one", "--no-localize", stdin=buf.getvalue())
    assert r.code == 1
    (head,) = r.kind("header")
    assert head["tool"] == "kdiff" and head["device"] == "cpu"  # the device the piped model ran on
    assert [x["kind"] for x in r.records][:3] == ["future_kind", "model", "header"]
    assert r.kind("diff")[0]["worst_index"] == [1, 2] and r.kind("diff")[0]["model"] == "cases.py:small"
    assert r.kind("model") == [msg for msg in r.kind("model") if msg["run"] == "upstream"]  # no second model record


def test_a_model_whose_own_eager_run_raises_is_bad_input_exit_2(kdiff):
    # the model's bug, not the compiler's (issue 33): one line naming why, an error record, no crash record
    r = kdiff(str(MODELS / "crashes.py"))
    assert r.code == 2 and not r.kind("crash")
    (e,) = r.kind("error")
    assert e["exit_code"] == 2 and e["message"].endswith("RuntimeError: the model blew up")
    err = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert err == [f"kdiff: error: {e['message']}"] and "the model's own eager run fails" in err[0]


def test_bad_usage(kdiff, tmp_path):
    r = kdiff(str(tmp_path / "nope.py"))
    assert r.code == 2 and "no such model file" in r.stderr and r.stderr.count("\n") == 1
    r = kdiff(str(MODELS / "mlp.py"), "--backend", "eager64")
    assert r.code == 2 and "eager64 is a reference" in r.stderr
    # --test is --backend's old name: still taken, and the error names the flag by its name now
    r = kdiff(str(MODELS / "mlp.py"), "--test", "nosuch")
    err = [ln for ln in r.stderr.splitlines() if "error:" in ln]  # any name torch registers is taken; not this
    assert r.code == 2 and len(err) == 1 and "backend 'nosuch': torch registers no backend of that name here" in err[0]
    r = kdiff(str(MODELS / "mlp.py"), "--test", "eager", "--backend", "aot_eager")
    assert r.code == 2 and r.stderr.count("\n") == 1 and "--test is --backend's old name: give one" in r.stderr
    r = kdiff(str(MODELS / "mlp.py"), "--backend", f"{CASES}:missing")
    assert r.code == 2 and "is not a callable torch.compile backend" in r.stderr


def test_help_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys\nfrom pt2kit.kdiff.cli import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert not {'torch', 'matplotlib', 'triton', 'rich'} & set(sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "--equal-nan" in p.stdout and "Exit codes:" in p.stdout
    assert "--backend BACKEND" in p.stdout and "--test" not in p.stdout  # the old name works, unlisted


def test_cache_objects_are_compared_tensor_by_tensor(kdiff):
    r = kdiff(f"{CASES}:with_cache")
    assert r.code == 0, r.stderr
    assert [d["output"] for d in r.kind("diff")] == [
        "out['logits']", "out['past_key_values'].layers[0].keys", "out['past_key_values'].layers[0].values"]
    assert all(d["passed"] and d["rule"] == "fp64" for d in r.kind("diff"))


def test_eager64_keeps_explicit_casts_in_float64(kdiff):
    r = kdiff(f"{CASES}:casts", "--ref", "eager64")
    assert r.code == 0, r.stderr  # was exit 3: "mat1 and mat2 must have the same dtype"
    (d,) = r.kind("diff")
    assert d["ref"] == "eager64" and d["passed"]


def test_a_near_tie_in_a_selection_is_named_not_called_a_bug(kdiff):
    r = kdiff(f"{CASES}:near_tie", "--backend", f"{CASES}:nudge_inputs", "--no-localize")
    assert r.code == 0, r.stderr
    (d,) = r.kind("diff")
    assert d["close"] is False and d["passed"] is True and d["rule"] == "tie"
    assert d["tie"]["op"] == "aten.topk.default" and d["tie"]["margin"] < 1e-6
    assert d["tie"]["source"].endswith("cases.py:" + str(_line_of("idx = (s * 1.0).topk")))
    assert "TIE out" in r.stderr and "near-tie in aten.topk.default" in r.stderr
    # the same difference judged by assert_close alone is a failure, as before
    assert kdiff(f"{CASES}:near_tie", "--backend", f"{CASES}:nudge_inputs", "--no-localize", "--verdict", "close").code == 1


def test_localisation_never_names_uninitialised_memory(kdiff):
    r = kdiff(f"{CASES}:uninitialised", "--config", "cpp.inject_relu_bug_TESTING_ONLY=accuracy")
    assert r.code == 1, r.stderr
    (v,) = r.kind("divergence")
    assert v["op"] == "aten.relu.default" and v["source"].endswith("cases.py:" + str(_line_of("return torch.relu(e - 1)")))


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(CASES.read_text().splitlines(), 1) if text in line)


def _model_record(file: str, entry: str | None = None, config: dict | None = None) -> bytes:
    import json

    rec = {"kind": "model", "v": 1, "run": "upstream", "model": "m", "file": file, "device": "cpu"}
    if entry:
        rec["entry"] = entry
    if config:
        rec["config"] = config
    return b'{"kind":"future_kind","v":1,"run":"upstream"}\n' + json.dumps(rec).encode() + b"\n"


def test_a_records_debug_trace_setting_writes_into_the_store_not_the_working_directory(kdiff, tmp_path):
    """A record whose settings hold Inductor's debug trace (the captured script ran with it) made kdiff write
    ./torch_compile_debug/ wherever the user stood; its files go under the store, said in one line."""
    import json

    rec = {"kind": "model", "v": 1, "run": "up", "model": "m", "file": str(CASES), "entry": "small", "device": "cpu",
           "settings": {"inductor.trace.enabled": "True", "inductor.fx_graph_cache": "False",
                        "functorch.enable_autograd_cache": "False"}}  # a cache hit writes no trace
    r = kdiff("--no-localize", stdin=json.dumps(rec).encode() + b"\n")
    assert r.code == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]  # the working directory: nothing new
    root = tmp_path / "store" / "torch_compile_debug"
    assert list(root.glob("run_*/torchinductor/*/output_code.py"))  # the trace still written, in the store
    assert f"note: inductor.trace.enabled writes debug files: into {root}, not the working directory" in r.stderr


def test_a_stream_names_only_py_model_files_it_never_runs_anything_else(kdiff, tmp_path):
    import sysconfig

    marker = tmp_path / "ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\n")
    evil.chmod(0o755)
    (tmp_path / "lib.so").write_bytes(b"\x7fELF not really")
    (tmp_path / "m.py").write_text("from os import getcwd\n" + (MODELS / "mlp.py").read_text())
    os_py = str(Path(sysconfig.get_paths()["stdlib"]) / "os.py")
    cases = [
        (_model_record(str(tmp_path / "lib.so")), "not a .py file"),
        (_model_record(os_py, "abort"), "part of a Python installation"),
        (_model_record(str(tmp_path / "m.py"), "getcwd"), "`getcwd` is not a function defined in this file"),
        (_model_record(str(MODELS / "mlp.py"), config={"cpp.cxx": f"('{evil}',)"}), "sets --config cpp.cxx"),
        (_model_record(str(MODELS / "mlp.py"), config={"some_setting": str(evil)}), "looks like a path"),
    ]
    for stdin, message in cases:
        r = kdiff(stdin=stdin)
        assert r.code == 2, r.stderr
        assert message in r.stderr and r.stderr.strip().splitlines()[-1].startswith("kdiff: error: ")
        # what was read is kept; kdiff's part starts at the model record, its header naming the device
        assert [x["kind"] for x in r.records][:3] == ["future_kind", "model", "header"]
        assert r.records[2]["tool"] == "kdiff" and r.records[2]["device"] == "cpu"
        assert r.records[-1]["kind"] == "error"
    assert not marker.exists()
    # the cautious drop the stream's config; the file that runs is named first
    r = kdiff("--no-config-from-stream", stdin=_model_record(str(MODELS / "mlp.py"), config={"cpp.cxx": str(evil)}))
    assert r.code == 0, r.stderr
    assert "ignoring the model record's config (cpp.cxx)" in r.stderr
    assert f"<stdin>:2: running model file {MODELS / 'mlp.py'} named by the stream" in r.stderr
    assert not marker.exists()


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--atol", "nan", "--atol nan: expected a finite number >= 0"),
    ("--rtol", "inf", "--rtol inf: expected a finite number >= 0"),
    ("--atol", "-1e-3", "--atol -0.001: expected a finite number >= 0"),
    ("--timeout", "0", "--timeout 0.0: expected a finite number > 0"),
    ("--timeout", "nan", "--timeout nan: expected a finite number > 0"),
    ("--atol", "abc", "Invalid value for '--atol'"),
    ("--timeout", "1e300", "--timeout 1e+300: expected a finite number > 0 and <= 604800"),
    ("--seed", str(2**64), f"--seed {2**64}: expected a seed torch accepts, from -2**63 to 2**64-1"),
])
def test_bad_flag_values_are_one_line_exit_2_before_anything_runs(kdiff, flag, value, message):
    r = kdiff(str(MODELS / "mlp.py"), flag, value)
    assert r.code == 2 and r.stdout == b""
    assert r.stderr.count("\n") == 1 and message in r.stderr, r.stderr


PRECISE = MODELS / "precise.py"


def test_default_precision_is_the_harness_and_a_models_own_tf32_is_turned_off(kdiff):
    r = kdiff(f"{PRECISE}:mlp")
    assert r.code == 0, r.stderr
    assert r.kind("header")[0]["precision"] == "harness"
    assert all("precision" not in d for d in r.kind("diff"))
    assert "the model turned on TF32 CPU matmul: judged with it off" in r.stderr
    assert "PyTorch's accuracy-harness precision: TF32 off, Inductor's fallback_random on)" in r.stderr


def test_as_configured_reports_the_modes_each_side_ran_with(kdiff):
    r = kdiff(f"{PRECISE}:mlp", "--precision", "as-configured")
    assert r.code == 0, r.stderr
    assert r.kind("header")[0]["precision"] == "as-configured"
    p = r.kind("diff")[0]["precision"]
    assert p["ref"] == ["TF32 CPU matmul"] and p["test"] == ["TF32 CPU matmul"]
    assert "cpu_matmul=tf32" in p["settings"] and "harness_passed" not in p  # it passed: nothing judged again
    assert "as configured: reference TF32 CPU matmul; test TF32 CPU matmul" in r.stderr


def test_fallback_random_is_the_harness_s_so_random_ops_pass_and_as_configured_names_the_op(kdiff):
    # the harness sets Inductor's fallback_random: the compiled rand_like draws eager's numbers
    assert kdiff(f"{PRECISE}:noisy", "--verdict", "close").code == 0
    r = kdiff(f"{PRECISE}:noisy", "--verdict", "close", "--precision", "as-configured")
    assert r.code == 0, r.stderr
    (d,) = r.kind("diff")
    assert d["passed"] and d["rule"] == "precision" and d["close"] is False
    p = d["precision"]
    assert p["harness_passed"] is True and "fallback_random=False" in p["settings"]
    assert p["op"].startswith("aten.rand") and r.kind("divergence") == []
    line = next(x for x in r.stderr.splitlines() if "PRECISION out: " in x)
    assert "fallback_random=False" in line and f" in {p['op']} at {p['source']}: passes under PyTorch's" in line


@pytest.mark.parametrize("precision", ["harness", "as-configured"])
def test_planted_relu_bug_still_fails_at_the_relu_under_either_precision(kdiff, precision):
    r = kdiff(f"{PRECISE}:mlp", "--precision", precision, "--config", "cpp.inject_relu_bug_TESTING_ONLY=accuracy")
    assert r.code == 1, r.stderr
    (d,) = r.kind("diff")
    assert not d["passed"] and d["rule"] != "precision"
    (v,) = r.kind("divergence")
    assert v["op"] == "aten.relu.default" and v["source"] == f"{PRECISE}:17"
    if precision == "as-configured":  # judged again without the model's TF32: still failing
        assert d["precision"]["harness_passed"] is False
def test_grad_compares_only_the_leaves_that_get_a_gradient_and_counts_frozen_parameters_apart(kdiff):
    r = kdiff(str(MODELS / "lora.py"), "--grad", "--no-localize")
    assert r.code == 0, r.stderr
    assert [d["output"] for d in r.kind("diff")] == ["out", "grad.l1.a", "grad.l1.b", "grad.l2.a", "grad.l2.b",
                                                     "grad.inputs[0]"]
    assert all(d["passed"] and d["metrics"] for d in r.kind("diff"))
    (m,) = r.kind("model")
    assert (m["trainable"], m["frozen"]) == (64, 6)
    assert "lora.py: 6 frozen parameters: no gradient\n" in r.stderr
    assert "lora.py: 6 of 6 leaves pass (inductor vs eager" in r.stderr


def test_any_name_torch_registers_and_aoti_are_a_backend_under_test():
    """--backend takes every name torch.compile takes here (TESTING_ONLY, cudagraphs...) and aoti, which runs
    each graph through an AOT Inductor package (run by hand: `kdiff small.py --backend aoti`, exit 0; CPU AOTI
    builds C++, minutes on two busy cores, too slow for CI); aoti with gradients is one usage line."""
    from pt2kit.kdiff import backends
    from pt2kit.kdiff.job import Job
    from pt2kit.runtime.common.errors import UsageError

    assert backends.resolve("aoti", role="test").compile is backends.aoti
    for name in ("relu_compile_error_TESTING_ONLY", "cudagraphs", "aot_eager_decomp_partition"):
        assert backends.resolve(name, role="test").compile == name
    with pytest.raises(UsageError, match=r"^--mode train with backend aoti: an AOT Inductor package runs inference only$"):
        Job(model="m.py", test="aoti", mode="train")
    with pytest.raises(UsageError, match=r"^--grad with backend aoti"):
        Job(model="m.py", test="aoti", grad=True)


def test_what_a_backend_file_sets_at_its_top_level_is_compiled_under(kdiff):
    # as importing the file does in the user's script (there torch.compile with it gets the relu bug); before,
    # kdiff put the setting back and said "1 of 1 leaves pass" on a real bug
    r = kdiff(str(MODELS / "mlp.py"), "--backend", f"{MODELS / 'set_at_top.py'}:compiled")
    assert r.code == 1, r.stderr
    assert ("set_at_top.py sets inductor.cpp.inject_relu_bug_TESTING_ONLY=accuracy at its top level: every side "
            "runs under it") in r.stderr
    (m,) = r.kind("model")
    assert m["settings"] == {"inductor.cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}  # minify downstream keeps it
    (v,) = r.kind("divergence")
    assert v["op"] == "aten.relu.default" and v["source"] == f"{MODELS / 'mlp.py'}:13"
