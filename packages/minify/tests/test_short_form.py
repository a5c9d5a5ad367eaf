"""The short form of a repro (issue 58): where a failure may be written so (judge.plan.short_form), the text it
renders (under 150 lines for one op, the graph first, torch alone), its verdict as PyTorch's own rule gives it,
and the full form written in its place where it does not fail in every fresh run."""

from __future__ import annotations

import contextlib
import re
import types

import pytest
from mntest import MODELS, cannot_test, run_repro, switch_off

from pt2kit.minify import ir
from pt2kit.minify.judge import plan
from pt2kit.minify.parent import literals, onemodel, repro
from pt2kit.runtime.common.precision import HARNESS

ACCURACY = {"kind": "accuracy", "signature": "accuracy", "precision": dict(HARNESS)}
COMPILE_ERROR = {"kind": "compile-error", "signature": "CppCompileError: C++ compile error"}
# torch.mv of float16 and float32: eager refuses it, Inductor computes it on torch 2.13 (tests/models/mv_dtype_mismatch.py)
EAGER = "RuntimeError: addmv input tensors must have the same dtype, but got Float, Half, and Float"
MISSING_ERROR = {"kind": "missing-error", "signature": EAGER, "eager": EAGER}
MV = '''class Repro(torch.nn.Module):
    def forward(self, x, y):
        # model.py:7  return torch.mv(x, y)
        mv = torch.ops.aten.mv.default(x, y)
        return (mv, )
'''
# an int64 division by zero that eager refuses and Inductor's C++ kernel performs on torch 2.13: SIGFPE
# (tests/models/sigfpe_trunc.py; tests/test_e2e_signal.py takes it through capture and minify to this form)
CRASH = {"kind": "crash", "signature": "SIGFPE", "eager": "RuntimeError: ZeroDivisionError"}
TRUNC = '''class Repro(torch.nn.Module):
    def forward(self, x, y):
        # model.py:9  return torch.div(x, y, rounding_mode="trunc")
        div = torch.ops.aten.div.Tensor_mode(x, y, rounding_mode = 'trunc')
        return (div, )
'''
TRUNC_SPECS = [("tensor", [3], [1], "int64", "cpu", 5, 9), ("tensor", [3], [1], "int64", "cpu", 0, 0)]
MV_SPECS = [("tensor", [3, 4], [4, 1], "float16", "cpu", -1.0, 1.0), ("tensor", [4], [1], "float32", "cpu", -1.0, 1.0)]
SPECS = [("tensor", [4, 8], [8, 1], "float32", "cpu", -2.0, 2.0)]
RELU = '''class Repro(torch.nn.Module):
    def forward(self, x):
        # model.py:12  y = torch.relu(x)
        relu = torch.ops.aten.relu.default(x)
        return (relu, )
'''


DYNAMO_RELU = RELU.replace("torch.ops.aten.relu.default", "torch.relu")
# the torch.autocast a script called a graph under (a record's `autocast`), and a graph whose mm autocast runs in it
AMP = [{"device_type": "cpu", "dtype": "bfloat16", "cache_enabled": True}]
MM_RELU = '''class Repro(torch.nn.Module):
    def forward(self, x, w):
        # model.py:12  y = torch.relu(x @ w)
        mm = torch.ops.aten.mm.default(x, w)
        relu = torch.ops.aten.relu.default(mm)
        return (relu, )
'''


def allows(failure=ACCURACY, backend="inductor", config=None, specs=SPECS, graph=RELU, ops=("aten.relu.default",),
           level="aten", phase="forward"):
    return plan.short_form(failure, backend, config or {}, list(specs), graph, list(ops), level=level, phase=phase)


def test_a_plain_accuracy_failure_may_be_short_and_what_the_short_form_cannot_judge_may_not():
    assert allows() == (plan.SHORT, "short_accuracy") == allows(failure={"kind": "accuracy", "signature": "accuracy"})
    assert allows(failure=COMPILE_ERROR) == (plan.SHORT, "short_error")
    assert allows(failure=MISSING_ERROR) == (plan.SHORT, "short_missing_error")
    assert allows(failure=COMPILE_ERROR, level="dynamo", ops=("aten.native_dropout.default",))  # no float64 run
    assert allows(failure=CRASH) == (plan.SHORT, "short_crash") == allows(failure={**CRASH, "eager": None})
    assert allows(phase="joint") == (plan.SHORT, "short_train")  # a training step's gradients
    # a training step's compile error and crash: the same checks, each side run as a training step
    assert [allows(failure=f, phase="joint")[1] for f in (COMPILE_ERROR, CRASH)] == ["short_error", "short_crash"]
    # a backward graph alone: a backend torch registers compiles it as an inference graph, as the full form does
    assert [allows(failure={**f, "phase": "backward"}, phase="backward")[1] for f in (ACCURACY, COMPILE_ERROR, CRASH)] \
        == ["short_accuracy", "short_error", "short_crash"]
    assert allows(level="dynamo", graph=DYNAMO_RELU) == (plan.SHORT, "short_accuracy")  # no dtype named, no tensor made
    assert allows(level="dynamo", graph=DYNAMO_RELU, phase="joint") == (plan.SHORT, "short_train")
    assert allows(failure={**ACCURACY, "rule": "close"})  # PyTorch's rule stands in for assert_close where it fails
    assert allows(specs=[(*SPECS[0], [0.5] * 32)])  # real values, written as literals
    assert allows(backend="/home/u/b.py:mine") == (plan.SHORT, "short_accuracy")  # a user's backend file
    assert allows(backend="aoti") == (plan.SHORT, "short_accuracy")  # AOT Inductor, as torch.compile's backend
    assert allows(specs=[(*SPECS[0], None, "non-leaf")]) == allows(specs=[(*SPECS[0], [0.5] * 32, "non-leaf")])
    # a pass the config holds as code (a model file's post_grad_custom_post_pass), loaded in main: code_config
    assert allows(config={"torch._inductor.config": {"post_grad_custom_post_pass": ("pt2kit:code", "/p.py", "f")}})
    assert allows(backend="aoti", failure=CRASH) == (plan.SHORT, "short_crash")
    assert plan.short_form(ACCURACY, "aoti", {}, SPECS, RELU, ["aten.relu.default"], dynamic=True) is None  # export's
    not_short = {
        "a float64 reference": dict(failure={**ACCURACY, "ref": "eager64"}),
        "the model's own precision": dict(failure={**ACCURACY, "precision": {**HARNESS, "matmul": "tf32"}}),
        "a backend of a module's attribute": dict(backend="mypkg.backends:mine"),
        "a backward graph through a backend file": dict(failure={**ACCURACY, "phase": "backward"}, phase="backward",
                                                        backend="/home/u/b.py:mine"),  # its bw_compiler's, in full
        "AOT Inductor's training step": dict(backend="aoti", phase="joint"),
        "a decomposition": dict(config={"torch._inductor.decomposition": {"aten.relu": "..."}}),
        "a jagged tensor": dict(specs=[("jagged", [2, 1], [1, 1], "float32", "cpu", None, None, [0, 1, 2], 1)]),
        "a random op": dict(ops=("aten.relu.default", "aten.native_dropout.default")),
        "a float32 cast in the graph": dict(graph=RELU.replace("(x)", "(x, dtype=torch.float32)")),
        "a Dynamo graph that casts": dict(level="dynamo", graph=RELU.replace("(x)", "(x.float())")),
        "a Dynamo graph that makes a tensor": dict(level="dynamo", graph=RELU.replace("(x)", "(x + torch.ones(8))")),
        "a Dynamo graph's training step that casts": dict(level="dynamo", phase="joint", graph=RELU.replace(
            "(x)", "(x.to(torch.float16))")),
        "a Dynamo graph that names a dtype bare": dict(level="dynamo", graph=DYNAMO_RELU.replace("(x)", "(x.view(torch.float32))")),
    }
    assert [why for why, kw in not_short.items() if allows(**kw)] == []


def render(config=None, dynamic=False, values=None, failure=ACCURACY, source=RELU, specs=SPECS,
           ops=("aten.relu.default",), backend="inductor", level="aten", phase="forward"):
    inputs = [ir.Spec(*s, values=values) for s in specs]
    c = ir.Candidate(source=source, inputs=inputs, nodes=len(ops), ops=list(ops), key="k", names=["x"] * len(specs),
                     grad=[True] * len(specs))
    check = allows(failure=failure, config=config, specs=[i.as_tuple() for i in inputs], graph=source, ops=ops,
                   level=level, phase=phase)
    assert check is not None
    return repro.render_short(c, failure=failure, check=check, backend=backend, config=config or {},
                              model="model.py:make", graph=0, torch_version="2.13.0+cpu", dynamic=dynamic, seed=0,
                              tool_version="0.16.0", level=level, phase=phase)


def test_the_short_form_reads_graph_first_imports_torch_alone_and_is_under_150_lines(tmp_path):
    text = render({"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'"}})
    assert len(text.splitlines()) <= 130, len(text.splitlines())  # 150 less the bisection's lines and two ops
    assert text.index("class Repro(") < text.index("INPUTS = ") < text.index("CONFIG = ") \
        < text.index(repro.CHECK) < text.index('if __name__ == "__main__":')
    assert "    from torch._dynamo.utils import same\n" in text  # in the import of torch's try: 125 if it fails
    assert not [ln for ln in text.splitlines() if ln.startswith(("import pt2kit", "from pt2kit"))]
    assert text.startswith('#!/usr/bin/env python3\n"""A standalone repro made by pt2kit minify 0.16.0 on torch')
    backward = render(failure={**ACCURACY, "phase": "backward"}, phase="backward")  # what it runs, said
    assert "(backward aten graph 0), cut to 1 op(s): aten.relu.default.\nRuns: the backward graph alone" in backward


def present_then_gone(bugged, fixed, tmp_path, what="output"):
    """PyTorch's accuracy rule's two verdicts, each in a fresh process: exit 1 on ``bugged`` (its first ``what`` fails
    ``same``), 0 on ``fixed``."""
    p = run(bugged, tmp_path)
    assert (p.returncode, p.stdout) == (1, f"repro: the bug is present: accuracy: {what} 0 fails torch._dynamo.utils."
                                           "same against float64 (tol 0.0001)\n"), p.stderr[-2000:]
    p = run(fixed, tmp_path)
    assert (p.returncode, p.stdout) == (0, f"repro: accuracy gone (every {what} passes torch._dynamo.utils.same): "
                                           "fixed\n"), p.stderr[-2000:]


def run(text, tmp_path, **env):
    path = tmp_path / "repro.py"
    path.write_text(text)
    return run_repro(path, **env)


def test_the_short_form_fails_while_the_bug_is_there_and_passes_once_it_is_gone(tmp_path):
    # the relu bug on real values (written as literals, made by the valued maker)
    bugged = render({"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'"}},
                    values=[(-1) ** i * i / 8 for i in range(32)])
    assert "def make_valued_inputs(" in bugged and "def make_inputs(" not in bugged
    p = run(bugged, tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout == "repro: the bug is present: accuracy: output 0 fails torch._dynamo.utils.same against " \
                       "float64 (tol 0.0001)\n"
    p = run(render(), tmp_path)  # the planted bug off: the same graph compiles right
    assert (p.returncode, p.stdout) == (0, "repro: accuracy gone (every output passes torch._dynamo.utils.same): "
                                           "fixed\n"), p.stderr
    cannot_test(run(render(), tmp_path, REPRO_DEVICE="nosuchdevice"), "RuntimeError: ")  # git bisect's skip
    # a backend this torch does not register: torch.compile's own InvalidBackend, one line, exit 125
    cannot_test(run(render().replace("BACKEND = 'inductor'", "BACKEND = 'nosuch'"), tmp_path), "InvalidBackend")


def test_an_input_that_was_no_leaf_is_made_a_leaf_and_said(tmp_path):
    """A graph input that was no leaf in the run (an activation after a graph break): the short form makes it a leaf of
    its own storage, with the plainest maker, and says so; the graph and its verdict are the same."""
    planted = {"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'"}}
    c = ir.Candidate(source=RELU, inputs=[ir.Spec(*SPECS[0], leaf=False)], nodes=1, ops=["aten.relu.default"], key="k",
                     names=["x"], grad=[True])
    assert c.inputs[0].as_tuple()[-1] == "non-leaf"
    text = repro.render_short(c, failure=ACCURACY, check=(plan.SHORT, "short_accuracy"), backend="inductor",
                              config=planted, model="model.py:make", graph=0, torch_version="2.13.0+cpu",
                              dynamic=False, seed=0, tool_version="0.16.0")
    assert "\nInputs: INPUTS[0], no leaf in the run (an op's output on a tensor that requires grad), made a leaf " \
           "here.\n" in text
    assert "non-leaf" not in text.split(repro.CHECK)[0] and "make_uniform_inputs))" in text
    p = run(text, tmp_path)
    assert p.returncode == 1 and p.stdout.startswith("repro: the bug is present: accuracy"), p.stdout + p.stderr


# NaN in the compiled outputs (capture --check nan, kdiff --check nan): a user's backend that makes every output NaN
NAN = {"kind": "nan", "signature": "nan"}
NAN_OUT = '''def nan_out(gm, example_inputs):
    return lambda *args: [out * float("nan") for out in gm(*args)]
'''


def test_a_nan_short_form_judges_the_compiled_outputs_by_the_workers_rule(tmp_path):
    """NaN or Inf the compiled outputs hold, at inference or in a backward graph alone: the short form judges by the
    workers' own rule (nonfinite, " (eager too)" where eager's outputs held it as well)."""
    assert allows(failure=NAN) == (plan.SHORT, "short_nan") == allows(failure={**NAN, "phase": "backward"},
                                                                         phase="backward")
    mine = tmp_path / "mine.py"
    mine.write_text(NAN_OUT)
    text = render(failure=NAN, backend=f"{mine}:nan_out")
    assert len(text.splitlines()) <= 145, len(text.splitlines())  # 94 with Inductor: the backend file's loader
    assert "\nSIGNATURE = 'nan'\n" in text and "\nFailure: the compiled output holds nan. Backend: " in text
    assert "def nonfinite(" in text and "import same" not in text
    p = run(text, tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: nan: the compiled outputs hold nan\n"), p.stderr
    p = run(re.sub(r"^BACKEND = .*$", "BACKEND = 'inductor'", text, flags=re.M), tmp_path)
    assert (p.returncode, p.stdout) == (0, "repro: nan gone (the compiled outputs hold no NaN or Inf): fixed\n"), p.stderr
    # a log of negative inputs: NaN on both sides, which only a signature saying so holds to
    log = dict(source=RELU.replace("relu.default(x)", "log.default(x)"), ops=("aten.log.default",))
    p = run(render(failure={**NAN, "signature": "nan (eager too)"}, **log), tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: nan: the compiled outputs hold nan (eager too)\n")
    p = run(render(failure=NAN, **log), tmp_path)
    assert (p.returncode, p.stdout) == (0, "repro: nan gone (the compiled outputs hold nan (eager too)): fixed\n")


# a user's aot_autograd backend whose backward compiler makes every gradient NaN (its forward as Dynamo traced it)
NAN_GRADIENTS = '''from torch._dynamo.backends.common import aot_autograd

def nan_backward(gm, example_inputs):
    return lambda *args: [g if g is None else g * float("nan") for g in gm(*args)]

backend = aot_autograd(fw_compiler=lambda gm, example_inputs: gm, bw_compiler=nan_backward)
'''


def test_a_training_steps_nan_short_form_judges_its_gradients(tmp_path):
    """NaN in a training step's gradients (capture --check nan of a training loop): the short form takes the step the
    workers take (harness.step) on each side and judges the gradients by the same rule as the outputs."""
    assert allows(failure=NAN, phase="joint") == (plan.SHORT, "short_nan")
    mine = tmp_path / "mine.py"
    mine.write_text(NAN_GRADIENTS)
    step = dict(source=DYNAMO_RELU, ops=("torch.relu",), level="dynamo", phase="joint")
    text = render(failure=NAN, backend=f"{mine}:backend", **step)
    assert len(text.splitlines()) <= 150, len(text.splitlines())
    assert "\nRuns: a training step (forward, the loss: each floating output's mean, summed; backward).\nFailure: the " \
           "compiled gradients hold nan. Backend: " in text and "def run_fwd_maybe_bwd" not in text
    assert " ".join(text.split()).endswith("make_uniform_inputs, SIGNATURE, grad=GRAD))"), text[-300:]
    p = run(text, tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: nan: the compiled gradients hold nan\n"), \
        p.stderr[-2000:]
    p = run(re.sub(r"^BACKEND = .*$", "BACKEND = 'aot_eager'", text, flags=re.M), tmp_path)
    assert (p.returncode, p.stdout) == (0, "repro: nan gone (the compiled gradients hold no NaN or Inf): fixed\n"), \
        p.stderr[-2000:]


def test_a_slice_of_a_larger_tensor_is_made_at_its_offset_into_a_storage_as_large(tmp_path):
    """An input that sat at an offset into a larger storage in the script (``x[:, 1:]`` handed over): the short form
    makes it so, seeded (make_laid_inputs: the values make_inputs draws, laid out as pt2kit_portable's make_tensor lays
    them), a non-leaf made a leaf at the same offset."""
    sliced = ("tensor", [4, 8], [9, 1], "float32", "cpu", -2.0, 2.0, None, {"offset": 1, "storage": 40})
    assert allows(specs=[sliced]) == (plan.SHORT, "short_accuracy")
    assert allows(specs=[(*sliced[:8], "non-leaf", sliced[8])], phase="joint") == (plan.SHORT, "short_train")
    planted = {"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'"}}
    c = ir.Candidate(source=RELU, inputs=[ir.Spec(*sliced[:7], offset=1, storage=40)], nodes=1,
                     ops=["aten.relu.default"], key="k", names=["x"], grad=[True])
    text = repro.render_short(c, failure=ACCURACY, check=(plan.SHORT, "short_accuracy"), backend="inductor",
                              config=planted, model="model.py:make", graph=0, torch_version="2.13.0+cpu",
                              dynamic=False, seed=0, tool_version="0.16.0")
    assert len(text.splitlines()) <= 130, len(text.splitlines())
    assert "def make_laid_inputs(" in text and "def make_inputs(" not in text
    assert "INPUTS = [('tensor', [4, 8], [9, 1], 'float32', 'cpu', -2.0, 2.0, None, {'offset': 1, 'storage': 40})]" \
        in text
    present_then_gone(text, re.sub(r"^CONFIG = .*$", "CONFIG = {}", text, flags=re.M), tmp_path)


# f(x, x[1]): the relu of x plus its own row, handed over as a second input (the script's aliasing, as minify's
# candidate keeps it: test_layouts_constants.py)
ALIASED = '''class Repro(torch.nn.Module):
    def forward(self, x, y):
        # model.py:12  return torch.relu(x) + y
        relu = torch.ops.aten.relu.default(x)
        add = torch.ops.aten.add.Tensor(relu, y)
        return (add, )
'''


def test_a_view_of_another_input_and_real_values_at_an_offset_are_made_so_in_the_short_form(tmp_path):
    """An input that was a view of another one's storage in the script (``f(x, x[1])``), and one of real values at an
    offset: the short form makes them as make_inputs does (make_shared_inputs: the view on the very storage), where
    the full form was written for them."""
    base = ("tensor", [4, 4], [4, 1], "float32", "cpu", -2.0, 2.0)
    row = ("tensor", [4], [1], "float32", "cpu", -2.0, 2.0, None, {"offset": 4, "view_of": 0})
    assert allows(specs=[base, row], graph=ALIASED, ops=("aten.relu.default", "aten.add.Tensor")) == (
        plan.SHORT, "short_accuracy")
    assert allows(specs=[(*base, [0.5] * 16, {"offset": 2, "storage": 20})]) == (plan.SHORT, "short_accuracy")
    c = ir.Candidate(source=ALIASED, inputs=[ir.Spec(*base), ir.Spec(*row[:7], offset=4, view_of=0)], nodes=2,
                     ops=["aten.relu.default", "aten.add.Tensor"], key="k", names=["x", "y"], grad=[True, True])
    text = repro.render_short(c, failure=ACCURACY, check=(plan.SHORT, "short_accuracy"), backend="inductor",
                              config={"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'"}},
                              model="model.py:make", graph=0, torch_version="2.13.0+cpu", dynamic=False, seed=0,
                              tool_version="0.16.0")
    assert len(text.splitlines()) <= 150, len(text.splitlines())
    assert "def make_shared_inputs(" in text and "def make_inputs(" not in text
    assert "'cpu', -2.0, 2.0, None, {'offset': 4, 'view_of': 0})]" in text
    present_then_gone(text, re.sub(r"^CONFIG = .*$", "CONFIG = {}", text, flags=re.M), tmp_path)


def test_a_graph_the_script_called_under_autocast_is_judged_inside_it(tmp_path):
    """A failure under the script's torch.autocast, at inference: the short form's main enters that autocast around
    the check, so the mm runs in bfloat16 as in the script (bfloat16's tolerance says so)."""
    assert [allows(failure={**f, "autocast": AMP})[1] for f in (ACCURACY, COMPILE_ERROR, CRASH)] == [
        "short_accuracy", "short_error", "short_crash"]
    mm = dict(failure={**ACCURACY, "autocast": AMP}, source=MM_RELU, ops=("aten.mm.default", "aten.relu.default"),
              specs=[SPECS[0], ("tensor", [8, 4], [4, 1], "float32", "cpu", -2.0, 2.0)])
    text = render({"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'"}}, **mm)
    assert len(text.splitlines()) <= 120, len(text.splitlines())
    assert "\nUnder: torch.autocast(cpu, bfloat16) around the whole check (main's with), as the script called it.\n" \
        in text
    assert "\n        amp = [torch.autocast('cpu', dtype=torch.bfloat16)]\n" in text
    assert text.endswith("\n    with amp[0]:  # as the script called the graph\n        raise SystemExit(short_accuracy("
                         "Repro, INPUTS, BACKEND, CONFIG, make_uniform_inputs))\n")
    p = run(text, tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: accuracy: output 0 fails torch._dynamo.utils."
                                           "same against float64 (tol 0.01)\n"), p.stderr[-2000:]
    p = run(render(**mm), tmp_path)
    assert (p.returncode, p.stdout) == (0, "repro: accuracy gone (every output passes torch._dynamo.utils.same): "
                                           "fixed\n"), p.stderr[-2000:]
    # an autocast this torch has not (a device type it lacks, in a bisect): cannot test, one line
    cannot_test(run(text.replace("torch.autocast('cpu'", "torch.autocast('nosuchdevice'"), tmp_path), "torch.autocast: ")
    # an entry's names become code only as bare words
    with pytest.raises(ValueError, match="not an autocast entry"):
        plan.autocast_entered([{"device_type": "cpu', dtype=print('x'))#", "dtype": "bfloat16"}])


# a user's backend in a file of their own: Inductor, its outputs one off (a wrong result the backend gives)
OFF_BY_ONE = '''from torch._inductor.compile_fx import compile_fx

def off_by_one(gm, example_inputs):
    compiled = compile_fx(gm, example_inputs)
    return lambda *args: [out + 1 for out in compiled(*args)]
'''


def test_a_users_backend_file_is_loaded_by_path_before_the_check(tmp_path):
    """A backend of the user's own file (--backend FILE.py:NAME): the short form loads it by its path in main, as the
    script imported it, and judges what it gives; exit 125 with one line where the file is gone, and BACKEND edited
    to a name torch registers judges without it."""
    mine = tmp_path / "mine.py"
    mine.write_text(OFF_BY_ONE)
    text = render(backend=f"{mine}:off_by_one")
    assert len(text.splitlines()) <= 135, len(text.splitlines())  # the docstring wraps the file's path
    assert f"(file, name), loaded by file_backend\nBACKEND = ({str(mine)!r}, 'off_by_one')\n" in text
    assert "def load_file_attr(" not in text and "kept_compiler_state" not in text
    assert f"the backend file {mine} (its off_by_one), loaded by that path" in text.replace("\n", " ")
    assert text.endswith("raise SystemExit(short_accuracy(Repro, INPUTS, file_backend(BACKEND), CONFIG, "
                         "make_uniform_inputs))\n")
    present_then_gone(text, re.sub(r"^BACKEND = .*$", "BACKEND = 'inductor'", text, flags=re.M), tmp_path)
    mine.unlink()
    cannot_test(run(text, tmp_path), f"the backend file {mine}: FileNotFoundError: ")


# a user's backend that runs Inductor's code on copies of its inputs: the outputs are right, a write into an input is lost
ON_COPIES = '''from torch._inductor.compile_fx import compile_fx

def on_copies(gm, example_inputs):
    compiled = compile_fx(gm, example_inputs)
    return lambda *args: compiled(*[a.clone() for a in args])
'''
WRITES = '''class Repro(torch.nn.Module):
    def forward(self, x):
        # model.py:12  x.add_(1); return x * 2
        add_ = torch.ops.aten.add_.Tensor(x, 1)
        mul = torch.ops.aten.mul.Tensor(add_, 2)
        return (mul, )
'''


def test_a_write_into_an_input_the_compiled_side_loses_fails_the_short_form(tmp_path):
    """A graph that writes into its input (``x.add_(1)``) through a backend that loses the write: every output agrees,
    the input as the run left it does not. The short form judges each tensor input as the run left it, as minify's
    workers do (PyTorch's rule reads the outputs alone), and names it; a backend that keeps the write passes."""
    mine = tmp_path / "mine.py"
    mine.write_text(ON_COPIES)
    text = render(backend=f"{mine}:on_copies", source=WRITES, ops=("aten.add_.Tensor", "aten.mul.Tensor"))
    assert len(text.splitlines()) <= 150, len(text.splitlines())
    p = run(text, tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: accuracy: INPUTS[0] as the run left it fails "
                                           "torch._dynamo.utils.same against float64 (tol 0.0001)\n"), p.stderr[-2000:]
    p = run(re.sub(r"^BACKEND = .*$", "BACKEND = 'inductor'", text, flags=re.M), tmp_path)
    assert (p.returncode, p.stdout) == (0, "repro: accuracy gone (every output passes torch._dynamo.utils.same): "
                                           "fixed\n"), p.stderr[-2000:]


def test_a_training_step_short_form_judges_its_gradients_by_pytorchs_rule(tmp_path):
    """A relu of the graph Dynamo hands the backend, run as a training step: Inductor's planted relu bug makes its
    gradient wrong (the saved output's mask); under 150 lines, GRAD after INPUTS, the same rule as the outputs'."""
    planted = {"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'"}}
    text = render(planted, source=DYNAMO_RELU, ops=("torch.relu",), level="dynamo", phase="joint")
    assert len(text.splitlines()) <= 140, len(text.splitlines())
    assert text.index("INPUTS = ") < text.index("GRAD = [True]  # the INPUTS that require grad") < text.index("BACKEND = ")
    assert "def short_train(" in text and "def step(" in text and "def gradients(" not in text
    fixed = render(source=DYNAMO_RELU, ops=("torch.relu",), level="dynamo", phase="joint")
    present_then_gone(text, fixed, tmp_path, "gradient")


def test_a_training_step_under_autocast_takes_its_gradients_outside_it(tmp_path):
    """A training step the script ran under torch.autocast (an AMP loop): main enters the autocast around the check,
    and the gradients are taken outside it (autocast_off_for), as the script's loss.backward() after its block is;
    the mm runs in bfloat16, Inductor's planted relu bug makes the square's gradient wrong, and the form passes once
    it is gone."""
    planted = {"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'accuracy'"}}
    mm = dict(failure={**ACCURACY, "autocast": AMP}, source=DYNAMO_RELU.replace("torch.relu(x)", "torch.relu(x @ w) ** 2")
              .replace("forward(self, x)", "forward(self, x, w)"), ops=("operator.matmul", "torch.relu", "operator.pow"),
              level="dynamo", phase="joint", specs=[SPECS[0], ("tensor", [8, 4], [4, 1], "float32", "cpu", -2.0, 2.0)])
    assert allows(**{k: v for k, v in mm.items() if k != "source"}, graph=mm["source"]) == (plan.SHORT, "short_train")
    text = render(planted, **mm)
    assert len(text.splitlines()) <= 150, len(text.splitlines())
    assert "around the whole check (main's with), the gradients taken outside it (autocast_off_for), as the script's " \
           "loss.backward() after its block. Needs:" in text.replace("\n", " ")
    assert text.endswith("\n    with amp[0]:  # as the script called the graph\n        raise SystemExit(short_train("
                         "Repro, INPUTS, GRAD, BACKEND, CONFIG, make_uniform_inputs,\n"
                         "                                     outside=autocast_off_for(['cpu'])))\n"), text[-300:]
    present_then_gone(text, render(**mm), tmp_path, "gradient")
    # a backward graph alone runs outside it, as in the script: its casts are in the graph AOTAutograd traced
    backward = render(planted, failure={**ACCURACY, "autocast": AMP, "phase": "backward"}, phase="backward")
    assert "amp = " not in backward and "\nUnder: no torch.autocast: the script called the forward under torch.autocast" \
        "(cpu, bfloat16), its backward ran\noutside it, as loss.backward() after the block does.\n" in backward
    p = run(backward, tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: accuracy: output 0 fails torch._dynamo.utils."
                                           "same against float64 (tol 0.0001)\n"), p.stderr[-2000:]
    # an error's or a crash's training step runs whole inside it, as PyTorch's own after_dynamo repro runs one
    error = render({"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'compile_error'"}},
                   **{**mm, "failure": {**COMPILE_ERROR, "autocast": AMP}})
    assert "autocast_off_for" not in error and "the backward too, as PyTorch's own after_dynamo repro" in error.replace(
        "\n", " ")


def test_the_short_forms_training_step_takes_its_gradients_under_what_it_is_handed():
    import torch

    from pt2kit.minify.judge.short import autocast_off_for, trained

    seen = []

    class Watch(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(torch.is_autocast_enabled("cpu"))
            return g * 2

    class M(torch.nn.Module):
        def forward(self, x):
            return (Watch.apply(x),)

    with torch.autocast("cpu", dtype=torch.bfloat16):
        off = trained(M(), [torch.ones(3)], [True], autocast_off_for(["cpu"]))
        kept = trained(M(), [torch.ones(3)], [True], contextlib.nullcontext)
    assert seen == [False, True] and off[0].tolist() == kept[0].tolist() == pytest.approx([2 / 3] * 3)


def test_an_error_short_form_fails_on_its_signature_alone_and_passes_once_the_error_is_gone(tmp_path):
    planted = {"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'compile_error'"}}
    text = render(planted, failure=COMPILE_ERROR)
    # PyTorch's check_str rule on the workers' signature (says), not their signature rule and what it reaches
    assert len(text.splitlines()) <= 130 and "def says(" in text and "def exception_signature(" not in text, \
        len(text.splitlines())
    assert "SIGNATURE = 'CppCompileError: C++ compile error'\n" in text and "import same" not in text
    p = run(text, tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: compile-error: CppCompileError: C++ compile "
                                           "error\n"), p.stderr[-2000:]
    p = run(render(failure=COMPILE_ERROR), tmp_path)  # the planted error off: it compiles
    assert (p.returncode, p.stdout) == (0, "repro: compile-error gone (the compiled side returns): fixed\n"), p.stderr
    # an error of another signature is not this bug
    other = render(planted, failure={**COMPILE_ERROR, "signature": "CppCompileError: another"})
    assert run(other, tmp_path).stdout == ("repro: compile-error gone (InductorError: CppCompileError: C++ compile "
                                           "error): fixed\n")
    # --check-str: the text that makes an error count, as it is (digits and names unmasked), whatever its signature
    assert allows(failure={**COMPILE_ERROR, "check_str": "C++"}) == (plan.SHORT, "short_error")
    held = render(planted, failure={**COMPILE_ERROR, "signature": "CppCompileError: another", "check_str": "C++ compile"})
    assert "\nCHECK_STR = 'C++ compile'\n" in held and "check_str=CHECK_STR))" in held
    assert run(held, tmp_path).returncode == 1
    assert run(held.replace("CHECK_STR = 'C++ compile'", "CHECK_STR = 'C++ compile error 7'"), tmp_path).stdout == (
        "repro: compile-error gone (InductorError: CppCompileError: C++ compile error): fixed\n")
    ended = render(planted, failure={**COMPILE_ERROR, "signature": "CppCompileError: it ends in a period."})
    assert "\nFailure: the compiled side raises CppCompileError: it ends in a period. Backend: inductor.\n" in ended
    # eager raising something the failure does not expect of it: cannot test
    cannot_test(run(text.replace("relu.default(x)", "relu.default(x).view(5)"), tmp_path),
                "eager cannot run the graph: RuntimeError: shape")


def test_check_str_keeps_an_error_holding_it_and_its_short_repro_judges_by_it(minify, tmp_path):
    out = tmp_path / "repro.py"
    bug = ("--config", "cpp.inject_relu_bug_TESTING_ONLY=compile_error", "--no-bisect")
    r = minify(f"{MODELS / 'small.py'}:mlp", *bug, "--check-str", "C++ compile error", "-o", str(out))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "compile-error" and rep["ops"] == ["aten.relu.default"] and rep["reproduced"] == 1, rep
    text = out.read_text()
    assert "\nCHECK_STR = 'C++ compile error'\n" in text and "def short_error(" in text and len(text.splitlines()) <= 150
    assert run_repro(out).returncode == 1
    switch_off(out, r"CONFIG = .*", "CONFIG = {}")
    assert run_repro(out).returncode == 0
    r = minify(f"{MODELS / 'small.py'}:mlp", *bug, "--check-str", "no such words")  # another error: not this one
    assert r.code == 0 and "does not hold --check-str 'no such words': nothing to minify" in r.stderr, r.stderr


def test_a_missing_error_short_form_signs_eagers_error_without_the_compilers_rule(tmp_path):
    """A missing error (real on torch 2.13): exit 1 while Inductor returns, 0 where the compiled side raises as eager;
    eager's error signed by error_signature, so no compiler's wrappers are embedded: under 130 lines."""
    missing = render(failure=MISSING_ERROR, source=MV, specs=MV_SPECS, ops=("aten.mv.default",))
    assert len(missing.splitlines()) <= 130 and "def short_missing_error(" in missing
    assert "def exception_signature(" not in missing and "COMPILER_WRAPPERS" not in missing
    p = run(missing, tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: missing-error: the compiled side returns where "
                                           f"eager raises {EAGER}\n"), p.stderr[-2000:]
    p = run(missing.replace("BACKEND = 'inductor'", "BACKEND = 'aot_eager'"), tmp_path)
    assert (p.returncode, p.stdout) == (0, "repro: missing-error gone (raises as eager does): fixed\n"), p.stderr
    # a training step's: each side run as PyTorch's minifier runs one (run_fwd_maybe_bwd), eager's raising in it
    assert allows(failure=MISSING_ERROR, phase="joint") == (plan.SHORT, "short_missing_error")
    step = render(failure=MISSING_ERROR, source=MV, specs=MV_SPECS, ops=("aten.mv.default",), phase="joint")
    assert len(step.splitlines()) <= 150 and " ".join(step.split()).endswith("SIGNATURE, run=training(GRAD)))"), step
    p = run(step, tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: missing-error: the compiled side returns where "
                                           f"eager raises {EAGER}\n"), p.stderr[-2000:]
    # eager returning where it must raise: not judged by the compiled side, whatever it does
    p = run(missing.replace("'float16'", "'float32'"), tmp_path)
    assert (p.returncode, p.stdout) == (0, "repro: missing-error gone (eager returns): fixed\n"), p.stderr
    cannot_test(run(missing.replace("mv.default(x, y)", "mv.default(x, y.view(2, 2))"), tmp_path),
                "eager cannot run the graph: RuntimeError: ")


def test_a_crash_short_form_is_judged_by_how_a_child_process_dies(tmp_path):
    """Exit 1 where the child dies of the failure's signal after eager's side ended, naming what eager raised (its
    own words: the signature rule stays out of the file); 0 where it ends; 125 where eager's side itself dies."""
    text = render(failure=CRASH, source=TRUNC, specs=TRUNC_SPECS, ops=("aten.div.Tensor_mode",))
    assert "def short_crash(" in text and "def _in_child(" in text and "def judge_crash(" not in text
    # 135 lines: a crash with real values and a 3-op training step's crash, each with its bisection, take ~15 more
    assert len(text.splitlines()) <= 135 and "def signed(" not in text and "def escape(" not in text, \
        len(text.splitlines())
    # the failure's record of eager's error is not what eager is held to: the child says what it raised
    p = run(text.replace("'eager': 'RuntimeError: ZeroDivisionError'", "'eager': 'RuntimeError: another'"), tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: the process died with SIGFPE where eager raises "
                                           "RuntimeError: ZeroDivisionError\n"), p.stderr[-2000:]
    p = run(text.replace("BACKEND = 'inductor'", "BACKEND = 'aot_eager'"), tmp_path)  # raises as eager does
    assert (p.returncode, p.stdout) == (0, "repro: crash gone (the process ended with exit 0): fixed\n"), p.stderr[-2000:]
    # eager's side dying of that signal is no compiler's crash: cannot test
    dies = text.replace("div = torch.ops.aten.div.Tensor_mode(x, y, rounding_mode = 'trunc')",
                        "div = os.kill(os.getpid(), signal.SIGFPE)")
    cannot_test(run(dies, tmp_path), "the process died with SIGFPE before eager's side of the graph ended")


def test_a_training_steps_compile_error_and_crash_run_each_side_as_a_training_step(tmp_path):
    """The error's and the crash's checks, handed run=training(GRAD): each side a training step as PyTorch's own
    minifier runs one (run_fwd_maybe_bwd, imported, not our step and loss: the full form took 340 lines for a real
    3-op training step's crash, the short form with our step 173)."""
    planted = {"torch._inductor.config": {"cpp.inject_relu_bug_TESTING_ONLY": "'compile_error'"}}
    text = render(planted, failure=COMPILE_ERROR, phase="joint")
    assert "\nRuns: a training step as PyTorch's minifier runs one (run_fwd_maybe_bwd: forward, loss, backward).\n" in text
    assert "GRAD = [True]  # the INPUTS that require grad, as in the real run\n" in text
    assert " ".join(text.split()).endswith("make_uniform_inputs, SIGNATURE, run=training(GRAD)))")
    assert "    from torch._dynamo.debug_utils import run_fwd_maybe_bwd\n" in text and "def step(" not in text
    assert len(text.splitlines()) <= 130, len(text.splitlines())
    p = run(text, tmp_path)
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: compile-error: CppCompileError: C++ compile "
                                           "error\n"), p.stderr[-2000:]
    p = run(render(failure=COMPILE_ERROR, phase="joint"), tmp_path)  # the planted error off: the step runs
    assert (p.returncode, p.stdout) == (0, "repro: compile-error gone (the compiled side returns): fixed\n"), p.stderr
    crash = render(failure=CRASH, source=TRUNC, specs=TRUNC_SPECS, ops=("aten.div.Tensor_mode",), phase="joint")
    assert " ".join(crash.split()).endswith("FAILURE, run=training(GRAD)))") and len(crash.splitlines()) <= 150
    p = run(crash, tmp_path)  # integer inputs: no gradient asked, the forward of the step crashes
    assert (p.returncode, p.stdout) == (1, "repro: the bug is present: the process died with SIGFPE where eager raises "
                                           "RuntimeError: ZeroDivisionError\n"), p.stderr[-2000:]


def test_the_full_form_is_written_where_the_short_one_does_not_fail_in_every_fresh_run(tmp_path):
    said = []
    pool = types.SimpleNamespace(env={"PATH": "/usr/bin:/bin"}, zygote=None)
    short, full = "raise SystemExit(0)\n", "raise SystemExit(1)\n"
    assert onemodel._verified(full, short, pool, said.append, False) == (full, 3, [])
    assert said == ["the short repro failed in 0 of 3 fresh runs (exit 0): the full one, judged as minify's workers "
                    "judge, is written"]
    said.clear()
    assert onemodel._verified(full, full.replace("1", "1  # short"), pool, said.append, False)[:2] == \
        (full.replace("1", "1  # short"), 3) and said == []
    assert onemodel._verified(full, None, pool, said.append, True) == (full, 1, []) and said == []


def test_real_values_are_written_in_their_shortest_digits_and_make_the_same_tensor():
    import math

    import torch

    from pt2kit.minify.judge.harness import make_valued_inputs

    for dtype, decades in (("float32", 30), ("float16", 4)):
        real = (torch.randn(64, dtype=torch.float64) * torch.logspace(-decades, decades, 64)).to(getattr(torch, dtype))
        real[:3] = torch.tensor([-0.0, float("nan"), float("-inf")])
        values = [v if math.isfinite(v) else str(v) for v in real.double().tolist()]  # "nan", "inf": the specs' text
        c = ir.Candidate(source="", inputs=[ir.Spec("tensor", [64], [1], dtype, "cpu", -1.0, 1.0, values=values)],
                         nodes=0, ops=[], key="k")
        written = literals.inputs_literal(c)
        (made,) = make_valued_inputs(eval(written))  # the literal, read back as the repro reads it
        assert str(made.tolist()) == str(real.tolist())  # every value, its sign of zero, NaN and Inf
        assert len(written) < 0.8 * len(repr([s.as_tuple() for s in c.inputs]))  # fewer digits, fewer lines
