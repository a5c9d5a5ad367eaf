"""fxcheck as a user runs it: real torch.compile, real AOTAutograd, the records and exit codes."""

from __future__ import annotations

import subprocess
import sys

from fxtest import MODELS, model


def test_float64_mlp_under_float32_profile(fxcheck):
    r = fxcheck(model("mlp64.py"), "--profile", "float32-only")
    assert r.code == 1, r.stderr  # findings: exit 1, like a linter
    kinds = [x["kind"] for x in r.records]
    assert kinds[:2] == ["header", "model"] and kinds[2:4] == ["graph", "graph"]
    v = r.kind("violation")
    addmm = [x for x in v if x["op"] == "aten.addmm.default"]
    assert [x["module"] for x in addmm] == ["fc1", "fc2"]
    assert addmm[0]["dtype"] == "float64" and addmm[0]["shape"] == [16, 16] and addmm[0]["phase"] == "forward"
    assert addmm[0]["source"] == f"{MODELS / 'mlp64.py'}:11" and addmm[1]["source"].endswith("mlp64.py:12")
    assert addmm[0]["code"] == "h = torch.relu(self.fc1(x))  # line 11"
    assert {x["constraint"] for x in v} == {"dtype"}
    assert "mlp64.py:11: dtype: aten.addmm.default reads float64" in r.stderr
    assert r.code == 1  # like a linter
    zero = fxcheck(model("mlp64.py"), "--profile", "float32-only", "--exit-zero")
    assert zero.code == 0 and len(zero.kind("violation")) == len(v) and "exit 0 with --exit-zero" in zero.stderr


def test_double_cast_is_found_at_the_users_line(fxcheck):
    r = fxcheck(model("cast.py"), "--dtypes", "float32,bfloat16")
    v = r.kind("violation")
    assert v[0]["op"] == "aten._to_copy.default" and v[0]["dtype"] == "float64"
    assert v[0]["source"].endswith("cast.py:6") and v[0]["message"].startswith("aten._to_copy.default produces float64")
    assert [x["op"] for x in v] == ["aten._to_copy.default", "aten.sum.default"]


def test_conv_deny_and_inplace_relu_deny(fxcheck):
    r = fxcheck(model("convnet.py"), "--deny", "aten.convolution", "--deny", "aten.relu_")
    v = r.kind("violation")
    assert [(x["op"], x["module"], x["phase"]) for x in v] == [
        ("aten.relu_.default", "features.1", "forward"),
        ("aten.convolution.default", "features.0", "forward"),
    ]
    assert all(x["source"].endswith("convnet.py:11") for x in v)
    assert "before functionalization" in v[0]["message"]
    assert v[1]["dtype"] == "float32" and v[1]["shape"] == [16, 16, 16, 16]


def test_backward_only_op_deny_has_phase_backward(fxcheck):
    r = fxcheck(model("convnet.py"), "--deny", "aten.threshold_backward", "--backward")
    v = r.kind("violation")
    assert len(v) == 1 and v[0]["phase"] == "backward" and v[0]["op"] == "aten.threshold_backward.default"
    assert v[0]["source"].endswith("convnet.py:11")
    assert {g["phase"] for g in r.kind("graph")} == {"dynamo", "forward", "backward"}
    assert fxcheck(model("convnet.py"), "--deny", "aten.threshold_backward").kind("violation") == []


def test_alignment_batch_10(fxcheck):
    r = fxcheck(f"{model('linear.py')}:batch10", "--align", "16")
    v = r.kind("violation")
    assert [(x.get("op"), x["message"].split(": ", 1)[1], x["shape"]) for x in v] == [
        (None, "dim 0 of size 10 is not a multiple of 16 (float32[10, 16])", [10, 16]),
        ("aten.addmm.default", "dim 0 of size 10 is not a multiple of 16 (float32[10, 32])", [10, 32]),
    ]
    assert v[0]["message"].startswith("input args_0 (arg")
    assert fxcheck(model("linear.py"), "--align", "16").kind("violation") == []


def test_contiguity_linear_clean_transpose_one_finding(fxcheck):
    assert fxcheck(model("linear.py"), "--contiguous").kind("violation") == []
    v = fxcheck(model("transpose.py"), "--contiguous").kind("violation")
    assert len(v) == 1
    assert v[0]["op"] == "aten.add.Tensor" and v[0]["source"].endswith("transpose.py:5")
    assert "strides [1, 32]" in v[0]["message"]


def test_lu_factor_deny_names_the_op_with_its_dtype(fxcheck):
    v = fxcheck(model("lu.py"), "--deny", "aten.linalg_lu_factor").kind("violation")
    assert len(v) == 1 and v[0]["phase"] == "dynamo" and v[0]["op"] == "aten.linalg_lu_factor"
    assert v[0]["message"].startswith("aten.linalg_lu_factor is denied by the profile; returns (float32[16, 16], int32[16]")
    assert v[0]["dtype"] == "float32" and v[0]["source"].endswith("lu.py:5")
    v = fxcheck(model("lu.py"), "--deny", "aten.linalg_lu_factor_ex.default").kind("violation")
    assert len(v) == 1 and v[0]["op"] == "aten.linalg_lu_factor_ex.default" and v[0]["phase"] == "forward"
    assert v[0]["dtype"] == "float32" and "returns (float32[16, 16], int32[16]" in v[0]["message"]


def test_clean_model_has_zero_findings(fxcheck):
    r = fxcheck(model("convnet.py"), "--profile", "mock-peer", "--align", "1")
    assert r.code == 0 and r.kind("violation") == [] and "clean: 1 graph(s), no findings" in r.stderr


def test_inductor_code_is_recorded_kernel_by_kernel(fxcheck, tmp_path):
    from pt2kit.schema import BlobRef, Store

    r = fxcheck(model("transpose.py"), "--inductor")
    (g,) = [x for x in r.kind("graph") if x["phase"] == "inductor"]
    assert g["kernels"] and all(k.startswith("cpp_fused") for k in g["kernels"])
    store = Store(tmp_path / "store")
    wrapper = store.read(BlobRef(**g["code"])).decode()
    assert g["kernels"][0] in wrapper
    assert 'extern "C"' in store.read(BlobRef(**g["blobs"][0])).decode()


def test_printing_model_keeps_stdout_records_only(fxcheck):
    r = fxcheck(model("chatty.py"))
    assert r.code == 0 and all(x["kind"] for x in r.records)
    assert "hello from forward" in r.stderr and b"hello" not in r.stdout
    assert r.kind("model")[0]["kwargs"] is True


def test_env_vars_and_peer_vars(fxcheck):
    r = fxcheck(f"{model('linear.py')}:batch10", env={"MOCK_ALIGNMENT": "16", "MOCK_STRICT": "1"})
    assert r.code == 1 and any("size 10" in x["message"] for x in r.kind("violation"))
    r = fxcheck(model("cast.py"), env={"PT2KIT_DTYPES": "float32"})
    assert r.kind("violation")[0]["op"] == "aten._to_copy.default"
    r = fxcheck(model("cast.py"), "--dtypes", "float32,float64", env={"PT2KIT_DTYPES": "float32"})
    assert r.kind("violation") == []  # the flag wins


def test_segfault_in_forward_is_a_crash_record_and_exit_3(fxcheck):
    r = fxcheck(model("segfault.py"))
    assert r.code == 3
    (crash,) = r.kind("crash")
    assert crash["signal"] == "SIGSEGV" and crash["model"] == "segfault.py"
    assert crash["stage"] in ("run", "capture") and "segfault.py" in crash["stderr_tail"]
    check = subprocess.run([sys.executable, "-m", "pt2kit.runtime", "cat"], input=r.stdout, capture_output=True)
    assert check.returncode == 0
    assert "crashed during" in r.stderr


def test_piped_captured_graph_is_checked_at_the_scripts_line(fxcheck, tmp_path):
    """`pt2kit capture -- python cast.py | fxcheck`: the graph's model file lies in the store under its hash;
    its findings name the record's label and the script's line, and the stream goes on unchanged."""
    import msgspec

    from pt2kit.schema import Captured, Header, Model, Store

    store = Store(tmp_path / "store")
    text = (MODELS / "captured_cast.txt").read_text().replace("{script}", str(MODELS / "cast.py"))
    code = store.put(text.encode(), "text/x-python", ".py")
    argv = ["python", "cast.py"]
    recs = [Header(v=1, run="r", tool="capture", tool_version="0.1.0", argv=argv, time="t", host="h", python="3",
                   store=str(store.root)),
            Model(v=1, run="r", model="cast.py[0/0]", file=str(store.path(code)),
                  captured=Captured(command=argv, compile_id="0/0", code=code, function="forward"))]
    stream = b"".join(msgspec.json.encode(x) + b"\n" for x in recs)
    r = fxcheck("--dtypes", "float32,bfloat16", stdin=stream)
    assert r.code == 1, r.stderr
    assert r.stdout.startswith(stream) and [x["kind"] for x in r.records].count("model") == 1
    v = r.kind("violation")
    assert [(x["model"], x["op"], x["source"]) for x in v] == [
        ("cast.py[0/0]", "aten._to_copy.default", f"{MODELS / 'cast.py'}:6"),
        ("cast.py[0/0]", "aten.sum.default", f"{MODELS / 'cast.py'}:7")]
    assert v[0]["code"] == "z = y.double()  # line 6"
    assert "cast.py[0/0]: " in r.stderr and "cast.py:6: dtype: aten._to_copy.default" in r.stderr
    assert "running model file" in r.stderr


def test_bad_inputs_are_one_line_and_exit_2(fxcheck, tmp_path):
    r = fxcheck(str(tmp_path / "missing.py"))
    assert r.code == 2 and r.stdout == b"" and r.stderr.count("\n") == 1 and "no such model file" in r.stderr
    r = fxcheck(model("noinputs.py"))
    assert r.code == 2 and "defines no `example_inputs`" in r.stderr and r.stderr.count("\n") == 1
    assert [x["kind"] for x in r.records] == ["header", "error"]
    bad = tmp_path / "syntax.py"
    bad.write_text("model = (\n")
    r = fxcheck(str(bad))
    assert r.code == 2 and "syntax.py:1: syntax error" in r.stderr and "Traceback" not in r.stderr
    for args, msg in [(("--dtypes", "float33"), "unknown dtype 'float33'"),
                      (("--profile", "nope"), "no such file or shipped profile"),
                      (("--max-tensor-bytes", "lots"), "expected a size in bytes"),
                      (("--align-min-size", "-1"), "--align-min-size -1: expected >= 0"),
                      (("--timeout", "1e300"), "--timeout 1e+300: expected a finite number > 0 and <= 604800"),
                      (("--config", "cpp.inject_relu_bug=accuracy"), "no such setting")]:
        r = fxcheck(model("linear.py"), *args)
        assert r.code == 2 and msg in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)


def test_broken_pipe_has_no_traceback(tmp_path):
    p = subprocess.run(f"{sys.executable} -m pt2kit.fxcheck {model('linear.py')} | head -1", shell=True,
                       capture_output=True, cwd=tmp_path, executable="/bin/bash")
    assert p.stdout.startswith(b'{"kind":"header"') and p.stdout.count(b"\n") == 1
    assert b"Traceback" not in p.stderr and b"BrokenPipe" not in p.stderr


def test_help_is_instant_and_imports_no_torch():
    code = ("import sys\nfrom pt2kit.fxcheck.cli import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert not {'torch', 'matplotlib', 'triton', 'rich'} & set(sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "--deny OP" in p.stdout and "Exit codes: 0 clean" in p.stdout


def test_align_checks_what_hardware_tiles_unless_scope_all(fxcheck):
    # C_in = 3 is a tiled dimension (the input activation's channels), the 3x3 kernel is not
    tiled = fxcheck(model("convnet.py"), "--align", "16", "--backward").kind("violation")
    assert [(v.get("op"), v["shape"], v["phase"]) for v in tiled] == [(None, [16, 3, 16, 16], "forward")]
    assert tiled[0]["message"].startswith("input x (primals_")
    every = fxcheck(model("convnet.py"), "--align", "16", "--align-scope", "all", "--backward").kind("violation")
    shapes = [v["shape"] for v in every]
    assert [16, 3, 3, 3] in shapes  # the conv weight, as a parameter and as its gradient
    assert sum(1 for v in every if v["shape"] == [16, 3, 3, 3]) == 2 and len(every) > len(tiled)


def test_a_dynamo_restart_is_no_failed_capture(fxcheck):
    """helper's second compile makes its float dynamic and Dynamo restarts the trace through the backend
    (TensorifyScalarRestartAnalysis): the graph is handed over again, so the attempt leaves no error
    record, no count and no duplicate finding (it read '1 of them not captured', exit 1, on a clean model)."""
    import runpy

    import torch

    r = fxcheck(model("restart.py"), "--deny", "aten.pow")
    assert r.code == 1 and not r.kind("error"), r.stderr  # the findings' exit, and no graph left out
    ns = runpy.run_path(model("restart.py"))
    graphs = torch._dynamo.explain(ns["model"])(*ns["example_inputs"]).graph_count
    assert f"2 findings in {graphs} graph(s) (deny 2)" in r.stderr and "not captured" not in r.stderr, r.stderr
    assert sorted(g.get("index", 0) for g in r.kind("graph") if g["phase"] == "dynamo") == list(range(graphs))
    assert [v["source"] for v in r.kind("violation")] == [f"{MODELS / 'restart.py'}:7"] * 2  # one per compile
