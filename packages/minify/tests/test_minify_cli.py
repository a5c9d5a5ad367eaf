"""minify on planted bugs, as a user runs it: the repro it writes runs alone, fails the same way 3 of 3
times, is a handful of ops, and passes once the planted bug is switched off."""

from __future__ import annotations

import re

import pytest
from mntest import MODELS, cannot_test, minify_in, run_repro, switch_off

RELU_BUG = "cpp.inject_relu_bug_TESTING_ONLY"


@pytest.fixture(scope="module")
def relu_accuracy(tmp_path_factory):
    """``minify resnet_mlp.py:make --config RELU_BUG=accuracy -o repro.py`` (the default precision, the
    harness's), run once for the two tests of its group: the run and the repro's text, which each test
    writes to a file of its own."""
    d = tmp_path_factory.mktemp("relu-accuracy")
    r = minify_in(d, f"{MODELS / 'resnet_mlp.py'}:make", "--config", f"{RELU_BUG}=accuracy", "-o", str(d / "repro.py"),
                  store=d / "store")
    assert r.code == 1, r.stderr
    return r, (d / "repro.py").read_text()


@pytest.mark.xdist_group("relu-accuracy")
def test_accuracy_bug_in_a_residual_net_is_cut_to_the_relu(relu_accuracy, tmp_path):
    r, text = relu_accuracy
    out = tmp_path / "repro.py"
    out.write_text(text)
    (rep,) = r.kind("repro")
    assert rep["failure"] == "accuracy" and rep["ops"] == ["aten.relu.default"]
    assert rep["nodes_before"] > 30 and rep["nodes_after"] == 1 and rep["reproduced"] == 3 == rep["runs"]
    assert rep["config"] == {RELU_BUG: "accuracy"} and rep["inputs_after"] < rep["inputs_before"]
    assert r.kind("model")[0]["model"] == "resnet_mlp.py:make"
    # the search ran ahead, beside the original run: localise, the relu's window, all sizes 1, the config
    assert "ahead, while the original runs: localize: 34 nodes left" in r.stderr and rep["queries"] == 4, r.stderr
    assert not re.search(r"^\s*(import|from) (pt2kit|pickle)", text, re.M)  # torch alone, no pickle
    assert re.search(r"# \S*resnet_mlp.py:\d+  x = torch.relu\(x\)\n", text)  # the user's line, as a comment
    p = run_repro(out)
    assert p.returncode == 1 and p.stdout.startswith("repro: the bug is present: accuracy"), p.stdout + p.stderr
    switch_off(out, r"CONFIG = .*", "CONFIG = {}")
    p = run_repro(out)
    assert p.returncode == 0 and "fixed" in p.stdout, p.stdout + p.stderr


@pytest.mark.xdist_group("relu-accuracy")
def test_the_relu_bug_is_bisected_to_inductors_lowering_of_the_relu(relu_accuracy, tmp_path):
    # torch's own CompilerBisector.do_bisect on a script with this bug answers the same: inductor,
    # lowerings, bisect number 0, debug info "relu"
    r, text = relu_accuracy
    (b,) = r.kind("bisect")
    assert b["model"] == "resnet_mlp.py:make" and b["graph"] == 0 and b["phase"] == "forward"
    assert b["chain"] == {"eager": False, "aot_eager": False, "aot_eager_decomp_partition": False, "inductor": True}
    assert (b["backend"], b["subsystem"], b["application"], b["applications"]) == ("inductor", "lowerings", 0, 1)
    assert b["what"] == "relu: aten.relu.default" and b["found"] and "config" not in b
    env = {"TORCH_BISECT_BACKEND": "inductor", "TORCH_BISECT_SUBSYSTEM": "lowerings", "TORCH_BISECT_MAX": "0"}
    assert b["env"] == env
    # faithfulness: the two runs, the lowering off (passes) and on (fails)
    assert b["off"] == {"setting": "TORCH_BISECT_BACKEND=inductor TORCH_BISECT_SUBSYSTEM=lowerings TORCH_BISECT_MAX=-1",
                        "fails": False, "signature": "passes"}
    assert b["on"]["fails"] and b["on"]["setting"].endswith("TORCH_BISECT_MAX=0") and b["steps"] >= 5
    assert re.search(r"^minify: resnet_mlp.py:make: stage: Inductor: lowerings, application 0 of 1 "
                     r"\(relu: aten.relu.default\); checked: off, it passes; on, it fails \(\d+ compiles", r.stderr, re.M)
    doc = text.split('"""')[1]
    assert ("\nStage (minify's bisection, with compiler_bisector's switches): Inductor: lowerings, application 0 of 1 "
            "(relu: aten.relu.default). Checked:\n") in doc.replace("(relu:\naten", "(relu: aten"), doc
    assert "    TORCH_BISECT_BACKEND=inductor TORCH_BISECT_SUBSYSTEM=lowerings TORCH_BISECT_MAX=0 python repro.py  " \
           "# fails (exit 1)" in doc
    # the docstring's commands do what it says, with PyTorch's own switches in a fresh python
    out = tmp_path / "repro.py"
    out.write_text(text)
    assert run_repro(out, **env).returncode == 1
    assert run_repro(out, **{**env, "TORCH_BISECT_MAX": "-1"}).returncode == 0


def test_compile_error_keeps_its_signature(minify, tmp_path):
    out = tmp_path / "repro.py"
    r = minify(f"{MODELS / 'resnet_mlp.py'}:make", "--config", f"{RELU_BUG}=compile_error", "-o", str(out))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "compile-error" and rep["signature"].startswith("CppCompileError: C++ compile error")
    # a compile error is verified by one fresh run (the compiler's answer to the program), not three
    assert rep["ops"] == ["aten.relu.default"] and rep["reproduced"] == 1 == rep["runs"]
    # the op that fails alone is found among the first of each kind, before any prefix search
    assert re.search(r"each op alone: 34 nodes left.*\n.*truncate: 1 nodes left", r.stderr), r.stderr
    (b,) = r.kind("bisect")  # the C++ compile of relu's kernel fails: relu lowered falls back to aten's kernel
    assert (b["subsystem"], b["application"], b["what"], b["found"]) == ("lowerings", 0, "relu: aten.relu.default", True)
    assert b["on"]["signature"] == rep["signature"] and b["off"]["signature"] == "passes"
    assert run_repro(out).returncode == 1
    switch_off(out, r"CONFIG = .*", "CONFIG = {}")
    assert run_repro(out).returncode == 0


def test_aot_inductor_bug_gives_a_repro_that_exports_packages_loads_and_runs(minify, tmp_path):
    # --backend aoti: the original run, every query and the repro export the program, package it with
    # aoti_compile_and_package, load the package and run it (the planted relu bug is in its C++ kernels)
    out = tmp_path / "repro.py"
    # a small graph: each query is an AOT Inductor package (a C++ build); resnet_mlp's 40 nodes took a minute here
    r = minify(f"{MODELS / 'small.py'}:mlp", "--backend", "aoti", "--config", f"{RELU_BUG}=accuracy",
               "-o", str(out))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "accuracy" and rep["backend"] == "aoti" and rep["ops"] == ["aten.relu.default"]
    assert rep["nodes_before"] >= 6 and rep["reproduced"] == 3, rep
    text = out.read_text()
    assert re.search(r"^BACKEND = 'aoti'$", text, re.M) and "aoti_compile_and_package" in text
    # the short form (issue 58): AOT Inductor's export, package and load as torch.compile's backend
    assert "def short_accuracy(" in text and "def aoti(gm, example_inputs):" in text and len(text.splitlines()) <= 150
    assert "(Repro, INPUTS, aoti if BACKEND == 'aoti' else BACKEND, CONFIG," in text
    p = run_repro(out)
    assert p.returncode == 1 and p.stdout.startswith("repro: the bug is present: accuracy"), p.stdout + p.stderr
    switch_off(out, r"CONFIG = .*", "CONFIG = {}")
    p = run_repro(out)
    assert p.returncode == 0 and "fixed" in p.stdout, p.stdout + p.stderr


def test_a_backend_that_kills_the_process_is_a_crash_signature(minify, tmp_path):
    out, backend = tmp_path / "repro.py", tmp_path / "backends.py"
    backend.write_text((MODELS / "small.py").read_text())
    r = minify(f"{MODELS / 'resnet_mlp.py'}:make", "--backend", f"{backend}:aborting_backend",
               "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "crash" and rep["signature"] == "SIGABRT"
    assert rep["ops"] == ["torch.sigmoid"] and rep["reproduced"] == 3  # the graph Dynamo hands the backend
    p = run_repro(out)
    # eager returned (nothing after the child's line of it): no "where eager raises"
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: the process died with SIGABRT\n"), p.stderr
    # the backend is the user's own file, loaded by path, and the docstring says the repro needs it
    assert re.search(rf"^BACKEND = \({str(backend)!r}, 'aborting_backend'\)$", out.read_text(), re.M)
    assert "def short_crash(" in out.read_text() and len(out.read_text().splitlines()) <= 150  # the short form
    assert f"the backend file {backend} (its aborting_backend)" in out.read_text().split('"""')[1].replace("\n", " ")
    # heap corruption dies by whichever check trips first (pytorch#181688: SIGABRT in one run, SIGSEGV in the
    # next): any memory fault is the crash, as the contract says; another signal is not
    doc = out.read_text().split('"""')[1].replace("\n# ", " ").replace("\n", " ")
    assert "the process dies with SIGABRT, or another memory fault (SIGSEGV, SIGBUS)" in doc, doc
    aborting = backend.read_text()
    for signum, died, code in ((11, "SIGSEGV", 1), (8, "SIGFPE", 0)):
        backend.write_text(aborting.replace("os.abort()", f"os.kill(os.getpid(), {signum})"))
        p = run_repro(out)
        said = f"died with {died}" if code else f"crash gone (the process ended with {died}): fixed"
        assert p.returncode == code and said in p.stdout, p.stdout + p.stderr
    backend.write_text(aborting)
    # where it cannot run, the crash is neither found nor ruled out: no device, a child whose torch
    # does not import (it never reached the backend), the backend file gone
    cannot_test(p := run_repro(out, REPRO_DEVICE="cuda"), "")  # torch's own words (the short form's check)
    assert "CUDA" in p.stderr, p.stderr
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os, sys\nif os.environ.get('_REPRO_CHILD'):\n"
                                           "    sys.modules['torch'] = None\n")
    child_only = run_repro(out, PYTHONPATH=str(site))  # the repro runs under -I: only its child reads PYTHONPATH
    cannot_test(child_only, "import torch: ModuleNotFoundError: import of torch halted")
    backend.unlink()
    cannot_test(run_repro(out), f"the backend file {backend}: FileNotFoundError: ")


def test_a_backend_of_the_users_file_is_minified_on_the_graph_dynamo_hands_it(minify, tmp_path):
    for bug, kind in (("compile_error", "compile-error"), ("accuracy", "accuracy")):
        out = tmp_path / f"{bug}.py"
        r = minify(f"{MODELS / 'resnet_mlp.py'}:make", "--backend", f"{MODELS / 'dynamo_backends.py'}:{bug}",
                   "-o", str(out))
        assert r.code == 1, r.stderr
        (rep,) = r.kind("repro")
        runs = 1 if kind == "compile-error" else 3  # a compile error: one fresh run verifies it
        assert rep["failure"] == kind and rep["ops"] == ["torch.relu"] and rep["reproduced"] == runs == rep["runs"], rep
        # torch's chain passes; the user's backend is no Inductor: no stage of it can be told, and it says so
        (b,) = r.kind("bisect")
        backend = f"{MODELS / 'dynamo_backends.py'}:{bug}"
        assert b["chain"] == {"eager": False, "aot_eager": False, "aot_eager_decomp_partition": False, backend: True}
        assert b["backend"] == b["tested"] == backend and "subsystem" not in b and not b.get("env")
        assert "calls no Inductor (none of its subsystems applied)" in b["verdict"] and "calls no Inductor" in r.stderr
        text = out.read_text()
        assert "the graph Dynamo hands the backend" in text and re.search(r"^        x = torch\.relu\(\w+\)$", text, re.M)
        assert run_repro(out).returncode == 1
        # on a device this torch lacks the output cannot be judged: 125, not "bug present" on a traceback
        cannot_test(p := run_repro(out, REPRO_DEVICE="cuda"), "")  # torch's own words (the short form's check)
        assert "CUDA" in p.stderr, p.stderr
        switch_off(out, r"BACKEND = \(.*\)", "BACKEND = 'eager'")
        p = run_repro(out)
        assert p.returncode == 0 and "fixed" in p.stdout, p.stdout + p.stderr


def test_an_input_that_was_no_leaf_is_rebuilt_as_none_in_every_candidate_and_the_repro(minify, tmp_path):
    # issue 44 item 4: each candidate and the repro made the input a leaf, so the backend's error was gone
    out = tmp_path / "repro.py"
    r = minify(str(MODELS / "nonleaf.py"), "--backend", "non_leaf_compile_error_TESTING_ONLY",
               "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "compile-error" and rep["signature"].startswith("TestingOnlyCompileError")
    assert rep["ops"] == ["torch.relu"] and rep["reproduced"] == 1 == rep["runs"], rep
    # the short form makes the input a leaf (plan.leaves), so it does not fail: said, and the full form written
    assert "the short repro failed in 0 of " in r.stderr and "def short_error(" not in out.read_text()
    p = run_repro(out)
    assert p.returncode == 1 and "TestingOnlyCompileError" in p.stdout, p.stdout + p.stderr
    switch_off(out, r", 'non-leaf'\)", ")")  # the input made a leaf: the backend has nothing to refuse
    p = run_repro(out)
    assert p.returncode == 0 and "fixed" in p.stdout, p.stdout + p.stderr


def test_violation_keeps_the_denied_op_only(minify, tmp_path):
    out = tmp_path / "repro.py"
    r = minify(f"{MODELS / 'small.py'}:conv", "--deny", "aten.convolution.default", "-o", str(out))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "violation" and rep["ops"] == ["aten.convolution.default"]
    assert not r.kind("bisect") and "not bisected: a violation is the graph's, not a compiler stage's" in r.stderr
    assert run_repro(out).returncode == 1
    switch_off(out, r"'op': 'aten.convolution.default'", "'op': 'aten.convolution_backward.default'")
    assert run_repro(out).returncode == 0


def test_nan_failure_and_nothing_to_minify(minify, tmp_path):
    out = tmp_path / "repro.py"
    r = minify(f"{MODELS / 'small.py'}:lognet", "--failure", "nan", "-o", str(out))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "nan" and rep["signature"] == "nan (eager too)"
    assert "aten.log.default" in rep["ops"] and rep["nodes_after"] <= 3
    (b,) = r.kind("bisect")  # eager has the NaN too: the eager backend (Dynamo alone) shows it, no later stage
    assert b["backend"] == "eager" and b["chain"]["eager"] and "subsystem" not in b and b["found"]
    assert "fails with the eager backend already" in b["verdict"] and "eager backend already" in r.stderr
    r = minify(f"{MODELS / 'small.py'}:clean")
    assert r.code == 0 and "no failure to minify" in r.stderr and not r.kind("repro") and not r.kind("bisect")
    r = minify(f"{MODELS / 'small.py'}:clean", "--failure", "accuracy")
    assert r.code == 3 and "shows none" in r.stderr


def test_a_dropout_repro_is_made_and_bisected_to_the_decomposition_of_native_dropout(minify, tmp_path):
    # every side of a candidate draws from one seed, as the original run does: before, eager and its float64
    # run drew different masks, so no candidate failed ("does not reproduce on the captured graph", exit 3)
    out = tmp_path / "repro.py"
    r = minify(f"{MODELS / 'small.py'}:dropout", "--precision", "as-configured", "-o", str(out))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "accuracy" and "aten.native_dropout.default" in rep["ops"] and rep["reproduced"] == 3
    # aot_eager_decomp_partition already fails: Inductor's decomposition of native_dropout draws its own numbers
    (b,) = r.kind("bisect")
    assert (b["backend"], b["subsystem"], b["application"], b["what"], b["found"]) == (
        "aot_eager_decomp_partition", "decomposition", 0, "aten.native_dropout.default", True), b
    assert b["chain"] == {"eager": False, "aot_eager": False, "aot_eager_decomp_partition": True, "inductor": True}
    env = {"TORCH_BISECT_BACKEND": "aot_eager_decomp_partition", "TORCH_BISECT_SUBSYSTEM": "decomposition"}
    assert run_repro(out, **env, TORCH_BISECT_MAX="0").returncode == 1
    assert run_repro(out, **env, TORCH_BISECT_MAX="-1").returncode == 0


def test_bad_inputs_are_one_line_and_exit_2(minify, tmp_path):
    for args, message in [
        (("nope.py",), "no such model file"),
        ((f"{MODELS / 'small.py'}:clean", "--backend", "nosuch"), "backend 'nosuch': torch registers no backend"),
        ((f"{MODELS / 'small.py'}:clean", "--jobs", "-1"), "--jobs -1"),
        ((f"{MODELS / 'small.py'}:clean", "--deny", "aten.mm", "--failure", "nan"), "--deny keeps a violation"),
        ((f"{MODELS / 'small.py'}:clean", "-o", str(tmp_path)), "is a directory"),
        ((f"{MODELS / 'small.py'}:clean", "--ref", "eager32"), "--ref"),
        ((f"{MODELS / 'small.py'}:clean", "--profile", "nope"), "--profile nope: no such file or shipped profile"),
        ((f"{MODELS / 'small.py'}:clean", "--align", "16", "--failure", "nan"), "they keep a violation"),
    ]:
        r = minify(*args)
        assert r.code == 2, (args, r.stderr)
        assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_model_whose_own_eager_run_raises_is_bad_input_exit_2(minify):
    # the model's bug, not the compiler's (issue 33), as kdiff says it: was exit 3 "the original run failed
    # before the backend did"
    r = minify(f"{MODELS / 'small.py'}:raises")
    assert r.code == 2 and not r.kind("crash") and not r.kind("repro"), r.stderr
    (e,) = r.kind("error")
    assert e["message"].endswith("the model's own eager run fails, so there is no compiler failure to minify "
                                 "(the model, not the compiler): RuntimeError: the model blew up")
    assert r.stderr.strip().splitlines()[-1] == f"minify: error: {e['message']}"


def test_with_stderr_closed_minify_works_and_says_nothing(tmp_path):
    # `minify ... 2>&-` (issue 55): its workers found fd 2 closed and died, and minify called that a crash
    # (exit 3, no record after its header); a tool with stderr closed only cannot speak
    import subprocess
    import sys

    from pt2kit.schema import Error, decode

    r = subprocess.run(["bash", "-c", 'exec 2>&-; "$@" > out.ndjson; echo "rc=$?"', "-", sys.executable, "-m",
                        "pt2kit.minify", f"{MODELS / 'small.py'}:raises", "--store", "store"],
                       capture_output=True, cwd=tmp_path, timeout=400)
    assert r.stdout == b"rc=2\n", r.stdout
    last = decode((tmp_path / "out.ndjson").read_bytes().splitlines()[-1])
    assert isinstance(last, Error) and last.message.endswith("RuntimeError: the model blew up")


def test_accuracy_search_keeps_the_divergence_that_reaches_the_output(minify, tmp_path):
    """PyTorch's test_accuracy_vs_strict_accuracy: log1p and relu both add 1, but log1p feeds only the
    mask of where(b, r, r). The repro is the relu that makes the output wrong (was the log1p: the first
    divergence in graph order, and alone a graph whose output differs)."""
    out, m = tmp_path / "repro.py", MODELS.parents[2] / "kdiff" / "tests" / "models" / "cases.py"
    r = minify(f"{m}:masked", "--backend", f"{m}:plus_one_relu_log1p", "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "accuracy" and rep["ops"] == ["torch.relu"] and rep["reproduced"] == 3, rep
    assert run_repro(out).returncode == 1


def test_fxcheck_rules_on_the_command_line_keep_their_first_violation(minify, tmp_path):
    """`minify m.py --align 16` and `--profile no-conv`: fxcheck's checks, run as a library on the
    graphs the backend gets, name the violation; a model they pass has nothing to minify."""
    r = minify(f"{MODELS / 'align_mlp.py'}:make", "--align", "16")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["signature"] == "align 16: aten.mul.Tensor" and rep["ops"] == ["aten.mul.Tensor"]
    r = minify(f"{MODELS / 'small.py'}:conv", "--profile", "no-conv")
    assert r.code == 1 and r.kind("repro")[0]["ops"] == ["aten.convolution.default"], r.stderr
    r = minify(f"{MODELS / 'small.py'}:clean", "--align", "2")
    assert r.code == 0 and "no violation to minify" in r.stderr and not r.kind("repro")


def test_a_setting_the_stream_may_not_give_is_refused_from_the_header_of_the_run_that_failed(minify, tmp_path):
    # the --config of the run that found a failure is stream data like a model record's: a compiler it
    # names is refused (one line, exit 2) before anything runs
    import msgspec

    from pt2kit.schema import Diff, Header, Model

    common = dict(tool_version="1", argv=["kdiff"], time="t", host="h", python="3", store=str(tmp_path))
    lines = [Header(v=1, run="a", tool="fxcheck", **common),
             Model(v=1, run="a", model="small.py:clean", file=str(MODELS / "small.py"), entry="clean"),
             Header(v=1, run="b", tool="kdiff", config={"cpp.cxx": "sh"}, **common),
             Diff(v=1, run="b", model="small.py:clean", output="out[0]", ref="eager", test="inductor",
                  dtype="float32", shape=[2], atol=0.0, rtol=0.0, passed=False)]
    r = minify(stdin=b"".join(msgspec.json.encode(x) + b"\n" for x in lines))
    assert r.code == 2, r.stderr
    assert "<stdin>:3: the header of the run that wrote this diff sets --config cpp.cxx" in r.stderr, r.stderr
    assert "--no-config-from-stream" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_stream_naming_a_link_to_a_non_py_file_runs_nothing(minify, tmp_path):
    import msgspec

    from pt2kit.schema import Diff, Model

    made = tmp_path / "made"
    evil = tmp_path / "evil.txt"
    evil.write_text(f"open({str(made)!r}, 'w').close()\n")
    sneaky = tmp_path / "sneaky.py"
    sneaky.symlink_to(evil)
    lines = [Model(v=1, run="a", model="sneaky.py", file=str(sneaky)),
             Diff(v=1, run="a", model="sneaky.py", output="out", ref="eager", test="inductor", dtype="float32",
                  shape=[2], atol=0.0, rtol=0.0, passed=False)]
    r = minify(stdin=b"".join(msgspec.json.encode(x) + b"\n" for x in lines))
    assert r.code == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"minify: error: <stdin>:1: the model record names {sneaky} (which resolves to {evil}), not a .py file: "
        "a stream runs only Python source"]
    assert not made.exists()


@pytest.mark.xdist_group("relu-accuracy")
def test_repro_judges_under_the_harness_precision_and_as_configured_keeps_the_models(minify, relu_accuracy, tmp_path):
    # the planted relu bug is cut to the relu under either setting. Under PyTorch's accuracy harness's precision
    # (the default: the group's shared run) the repro is the short form, PyTorch's own rule under torch's
    # defaults, which fails alone too; under the settings the model file left (as-configured, the user's own)
    # it is the full form, which applies them
    for precision, says in (("harness", "under torch's precision defaults"),
                            ("as-configured", "Judged under the model's own precision: ")):
        out = tmp_path / f"{precision}.py"
        if precision == "harness":
            r, text = relu_accuracy
            out.write_text(text)
        else:
            r = minify(f"{MODELS / 'resnet_mlp.py'}:make", "--precision", precision, "--config",
                       f"{RELU_BUG}=accuracy", "-o", str(out), "--no-bisect")
        assert r.code == 1, r.stderr
        (rep,) = r.kind("repro")
        assert rep["ops"] == ["aten.relu.default"] and rep["reproduced"] == 3
        assert r.kind("header")[0]["precision"] == precision
        text = out.read_text()
        assert says in text and ("'precision': {" in text) == (precision == "as-configured"), text
        assert ("torch._dynamo.utils.same" in text) == (precision == "harness")
        assert "'fallback_random': True" not in text  # the short form's torch defaults; the model's own: off
        if precision == "harness":
            continue  # this very text fails alone and passes fixed in test_accuracy_bug_in_a_residual_net_...
        assert run_repro(out).returncode == 1
        switch_off(out, r"CONFIG = .*", "CONFIG = {}")
        assert run_repro(out).returncode == 0


# what minify says where the stream's command names no script: none, or a block captured in process (a notebook's
# cells, whose header argv capture writes so), where the line says what to do instead
NO_SCRIPT = {
    "a command": (["pt2kit", "capture"], "the command (none) is not `python SCRIPT.py`"),
    "in process": (["/venv/bin/python", "(in process)"],
                   "a block captured in process (with pt2kit.capture()) has none: save the code it ran as a script "
                   "without the capture (in IPython: `%save repro.py N-M`, the cells' numbers) and run `pt2kit "
                   "triage -- python repro.py`"),
}


@pytest.mark.parametrize("argv, why", NO_SCRIPT.values(), ids=NO_SCRIPT)
def test_a_failure_before_any_graph_naming_no_script_is_one_line_and_exit_2(minify, tmp_path, argv, why):
    """A stream where Dynamo raised before handing a backend any graph (fullgraph=True over a break): a crash
    naming no graph, no model record, the header naming the trace (guardscan's work), and no command after
    `--` in its argv: no script to reduce (test_script_reduced.py reduces one). minify exited 0 in silence.
    A block captured in process: the line says to save its cells as a script for triage."""
    from pt2kit.schema import BlobRef, Crash, Header
    from pt2kit.schema.stream import encode

    env = {"v": 1, "run": "r1"}
    trace = BlobRef(path="blobs/ab/ab.log", sha256="ab" * 32, size=1, media_type="text/plain")
    recs = [Header(**env, tool="capture", tool_version="0", argv=argv, time="t", host="h",
                   python="3.11", store=str(tmp_path / "store"), traces=[trace]),
            Crash(**env, stage="run", exitcode=1, exception="Unsupported",
                  message="Failed to trace builtin operator\n  Explanation: Dynamo does not know how to trace print")]
    r = minify(stdin=b"".join(encode(x) + b"\n" for x in recs))
    assert r.code == 2, r.stderr
    assert r.stderr.splitlines()[-1] == (
        "minify: error: <stdin>:2: Unsupported: Failed to trace builtin operator (the command failed and no graph "
        f"was kept or shows it, so there is no graph to cut, and no script to reduce: {why})")
