"""The parent-child contract is spelled once (boot/pt2kit_capture_contract.py): the parent's msgspec
Structs decode exactly its fields, and the boot's lines carry exactly them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import msgspec
import torch

import pt2kit.capture
from pt2kit.capture.boot import pt2kit_capture_contract as contract
from pt2kit.capture.job import Job
from pt2kit.capture.records import Entry, Exit, Export, Input

BOOT = Path(pt2kit.capture.__file__).parent / "boot"


def test_the_parents_structs_are_the_contracts_lines():
    # set by the parent (numbering, tagging, its run check, a signal in a call), never by the boot
    parents_own = {"part", "proc", "unrunnable", "signal"}
    assert set(Entry.__struct_fields__) - parents_own == set(contract.Line.__annotations__)
    assert set(Input.__struct_fields__) == set(contract.InputLine.__annotations__)
    assert set(Exit.__struct_fields__) == set(contract.ExitLine.__annotations__)
    assert set(Export.__struct_fields__) == set(contract.ExportLine.__annotations__)


def test_a_line_the_boot_writes_has_every_field_and_decodes(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BOOT))
    monkeypatch.setenv(contract.ENV_DIR, str(tmp_path))
    import pt2kit_capture_manifest as manifest

    line = manifest.new_line("eager")
    line["compile_id"] = "0/0"
    graph = torch.fx.Graph()
    graph.output(graph.call_function(torch.neg, (graph.placeholder("x"),)))
    manifest.record(line, torch.fx.GraphModule(torch.nn.Module(), graph), [torch.ones(2)], "handed")
    assert set(line) == set(contract.Line.__annotations__)
    assert set(line["inputs"][0]) <= set(contract.InputLine.__annotations__)
    entry = msgspec.json.decode(msgspec.json.encode(line), type=Entry)
    assert (entry.file, entry.values, entry.selected) == (line["file"], "small", True)


def test_the_command_gets_the_contracts_variables():
    job = Job(command=["python", "t.py"], graphs=("0/1", "aoti/0"), rank=None, values="none", check="nan")
    env = contract.child_env("/s", job.values, job.max_value_bytes, job.run_budget, job.rank, job.graphs, job.check)
    assert env == {"PT2KIT_CAPTURE_DIR": "/s", "PT2KIT_CAPTURE_VALUES": "none",
                   "PT2KIT_CAPTURE_MAX_VALUE_BYTES": str(64 << 20), "PT2KIT_CAPTURE_MAX_RUN_BYTES": "",
                   "PT2KIT_CAPTURE_RANK": "all", "PT2KIT_CAPTURE_GRAPHS": "0/1,aoti/0", "PT2KIT_CAPTURE_CHECK": "nan"}
    assert contract.child_env("/s", "small", 1, None, 0, ("all",))["PT2KIT_CAPTURE_CHECK"] == ""  # no check
    assert Job(command=["python"]).run_budget == 1 << 30 and sys.modules["pt2kit.capture.job"].VALUES is contract.VALUES


def test_a_process_killed_inside_a_compiled_call_names_that_graph_its_call_and_phase(tmp_path, monkeypatch):
    """The boot's running marker (pt2kit_capture_running) survives the process; the parent reads it back
    into one more line for the graph: a crash record naming it, the signal, the call and the phase."""
    from pt2kit.capture.crashes import run_crash_fields
    from pt2kit.capture.records import Process, killed_in_call, read_processes

    monkeypatch.syspath_prepend(str(BOOT))
    monkeypatch.setenv(contract.ENV_DIR, str(tmp_path))
    import pt2kit_capture_running as running

    monkeypatch.setattr(running, "_MAP", {})  # this test's scratch dir: not the one an earlier test mapped
    graph = {"seq": 0}
    outer = running.enter(graph, 3, "forward")
    inner = running.enter(graph, 3, "backward")
    running.leave(inner)  # a call that returned puts back what ran around it
    (proc,) = read_processes(tmp_path)
    assert proc.running == (0, 3, "run", "forward")
    running.leave(outer)
    assert read_processes(tmp_path)[0].running is None  # none running: zeros
    running.enter(graph, 2, "backward")  # ... and the process is killed there
    (proc,) = read_processes(tmp_path)
    line = Entry(compile_id="0/0", rank=None, world=None, pid=proc.pid, argv=["t.py"], backend="inductor", file="m.py",
                 grad=True, seq=0)
    proc.entries = [line]
    killed_in_call(Process(proc.pid, proc.dir, entries=[line], running=proc.running), 0)  # exit 0: no signal, no line
    killed_in_call(proc, -11)
    assert run_crash_fields(proc.entries[1], "t.py[0/0]") == {
        "model": "t.py[0/0]", "stage": "run", "signal": "SIGSEGV", "backend": "inductor", "step": 2, "phase": "backward",
        "message": "killed by SIGSEGV in its compiled backward at call 2; its model holds call 1's inputs (call 2's died "
                   "with the process)"}
    assert (proc.entries[1].of, proc.entries[1].file) == (0, "m.py")  # the graph's model file: its first call's inputs
    running.enter(graph, 0, None, "aoti-load")  # AOT Inductor's package segfaults as it loads (torch 2.11 on CUDA)
    (proc,) = read_processes(tmp_path)
    proc.entries = [line]
    killed_in_call(proc, -11)
    assert run_crash_fields(proc.entries[1], "t.py[aoti/0]") == {
        "model": "t.py[aoti/0]", "stage": "aoti-load", "signal": "SIGSEGV", "backend": "inductor", "step": None,
        "phase": None, "message": "killed by SIGSEGV while loading its AOT Inductor package"}


def test_a_process_killed_while_its_backend_compiles_a_graph_names_that_graph(tmp_path, monkeypatch):
    """A signal in the backend's compile (its C++ code segfaults, it aborts): the graph's line is appended
    only once the compile returns, so the boot writes it to compiling-<N>.json first and marks the compile;
    the parent reads it back into the graph's line, and a crash record of stage compile names it."""
    from pt2kit.capture.crashes import compile_crash_fields
    from pt2kit.capture.records import killed_in_call, read_processes

    monkeypatch.syspath_prepend(str(BOOT))
    monkeypatch.setenv(contract.ENV_DIR, str(tmp_path))
    import pt2kit_capture_manifest as manifest
    import pt2kit_capture_running as running

    monkeypatch.setattr(running, "_MAP", {})  # this test's scratch dir: not the one an earlier test mapped
    line = manifest.new_line("segv_compile")
    line.update(compile_id="0/0", argv=["t.py"])
    graph = torch.fx.Graph()
    graph.output(graph.call_function(torch.relu, (graph.placeholder("x"),)))
    manifest.record(line, torch.fx.GraphModule(torch.nn.Module(), graph), [torch.ones(2)], "handed")
    done = running.compiling(line, "compile")
    running.compiled(done)  # a compile that returned: nothing left behind
    (proc,) = read_processes(tmp_path)
    assert proc.running is None and not list(proc.dir.glob("compiling-*"))
    running.compiling(line, "compile")  # ... and the process is killed in it
    (proc,) = read_processes(tmp_path)
    killed_in_call(proc, -6)
    (entry,) = proc.entries
    assert (entry.stage, entry.signal, entry.of, entry.file) == ("compile", "SIGABRT", None, line["file"])
    assert compile_crash_fields(entry, ["python", "t.py"]) == {
        "model": "t.py[0/0]", "stage": "compile", "signal": "SIGABRT", "backend": "segv_compile",
        "message": "killed by SIGABRT while its backend compiled it"}


def test_check_accuracy_judges_the_gradients_a_compiled_backward_gives_against_eagers(tmp_path, monkeypatch):
    """--check accuracy on a backward (pt2kit_capture_check.CheckedBackward): a gradient 1.5x eager's is the
    graph's call failing the check (a line naming the input and the call, its inputs written); eager's own
    gradients pass; a backward whose gradients do not line up with the graph's inputs is not judged."""
    monkeypatch.syspath_prepend(str(BOOT))
    monkeypatch.setenv(contract.ENV_DIR, str(tmp_path))
    import pt2kit_capture_check as check
    import pt2kit_capture_manifest as manifest

    class Net(torch.nn.Module):
        def forward(self, w, x):
            return (torch.relu(x @ w),)

    gm = torch.fx.symbolic_trace(Net())
    w, x = torch.nn.Parameter(torch.randn(4, 3)), torch.randn(2, 4)
    line = manifest.new_line("eager")
    line["compile_id"] = "0/0"
    manifest.record(line, gm, [w, x], "handed")
    manifest.append(line)
    judge = check.CheckedBackward(check.Checked("accuracy", gm, line)).judge
    tangent = torch.ones(2, 3)
    (eager,) = torch.autograd.grad(gm(w, x)[0], [w], tangent)
    judge(1, [w, x], [tangent], [eager, None])  # right: passes
    judge(2, [w, x], [tangent], [eager * 1.5])  # one gradient for two inputs: not judged
    assert len((tmp_path / f"p{os.getpid()}" / contract.MANIFEST).read_text().splitlines()) == 1
    judge(3, [w, x], [tangent], [eager * 1.5, None])
    *_, failed = (tmp_path / f"p{os.getpid()}" / contract.MANIFEST).read_text().splitlines()
    entry = msgspec.json.decode(failed, type=Entry)
    # `of` is the failing graph's line: its seq, counted per process (other tests in this worker append lines too)
    assert (entry.call, entry.of, entry.file is not None) == (3, line["seq"], True)
    assert entry.check.startswith("accuracy: the gradient of input 0 (w): "), entry.check


class _Writes(torch.nn.Module):
    """A graph that writes into its first input and reads its second: ``f(a, a[1])`` reads the write."""

    def forward(self, a, row):
        a.add_(1)
        return (row * 2,)


def _checked(how, module, inputs, tmp_path, monkeypatch):
    """``module``'s traced graph recorded as handed ``inputs`` and wrapped by ``--check how``, the boot's modules
    importable: (pt2kit_capture_check, its Checked)."""
    monkeypatch.syspath_prepend(str(BOOT))
    monkeypatch.setenv(contract.ENV_DIR, str(tmp_path))
    import pt2kit_capture_check as check
    import pt2kit_capture_manifest as manifest

    gm = torch.fx.symbolic_trace(module)
    line = manifest.new_line("eager")
    line["compile_id"] = "0/0"
    manifest.record(line, gm, inputs, "handed")
    manifest.append(line)
    return check, check.Checked(how, gm, line)


def _manifest(tmp_path):
    """The manifest's lines this process wrote."""
    return (tmp_path / f"p{os.getpid()}" / contract.MANIFEST).read_text().splitlines()


def test_check_accuracy_runs_eager_on_inputs_that_share_a_storage_sharing_its_copy(tmp_path, monkeypatch):
    """--check accuracy on a call handed ``f(a, a[1])`` whose graph writes into ``a`` and reads ``a[1]``: eager's
    run gets copies that share one storage as the call's inputs did (pt2kit_portable.copy_inputs, every tool's
    rule), so it reads the row written, as the compiled call did, and a right call passes. Copied a tensor at a
    time, eager read the row unwritten and the right call was written up as a failure."""
    a = torch.zeros(3, 2)
    _, checked = _checked("accuracy", _Writes(), [a, a[1]], tmp_path, monkeypatch)
    (out,) = checked.wrap(checked.ref.forward)(a, a[1])  # the "compiled" call: the graph itself, right by construction
    assert out.tolist() == [2.0, 2.0] and a.tolist() == [[1.0, 1.0]] * 3
    assert checked.on and len(_manifest(tmp_path)) == 1



def test_a_parameter_input_is_copied_by_one_rule_in_the_check_and_in_a_training_step(tmp_path, monkeypatch):
    """A call ``f(w, w[1])`` with ``w`` an nn.Parameter, whose graph writes into ``w`` and reads the row: both
    places that copy a Parameter input, capture's --check (eager's run) and runtime's training step
    (``step_inputs``), copy it by pt2kit_portable.copy_inputs(parameters=True): the row's copy reads the write
    (the answer [2, 2] the call gave), and the script's ``w`` holds only the call's own write."""
    from pt2kit.runtime.worker.training import step_inputs

    w = torch.nn.Parameter(torch.zeros(3, 2), requires_grad=False)
    check, checked = _checked("accuracy", _Writes(), [w, w.detach()[1]], tmp_path, monkeypatch)
    (out,) = checked.wrap(checked.ref.forward)(w, w.detach()[1])  # the "compiled" call: the graph itself
    # eager's run, on copies, gave the call's answer (else the check fails the call) and wrote into its own w
    assert out.tolist() == [2.0, 2.0] and w.tolist() == [[1.0, 1.0]] * 3
    assert checked.on and len(_manifest(tmp_path)) == 1
    copies = step_inputs([w, w.detach()[1]])
    assert checked.ref(*copies)[0].tolist() == [4.0, 4.0] and w.tolist() == [[1.0, 1.0]] * 3  # the copy's write only
    # the check's copy and the step's: one storage for the Parameter and its row, the script's untouched
    for c in (check._copies([w, w.detach()[1]]), copies):
        assert c[0].untyped_storage().data_ptr() == c[1].untyped_storage().data_ptr() != w.untyped_storage().data_ptr()
        assert not c[0].requires_grad


def test_check_nan_counts_only_what_is_non_finite_where_eagers_value_is_finite(tmp_path, monkeypatch):
    """--check nan's one rule (pt2kit_capture_check.nonfinite_where_eager_finite, outputs and gradients alike): a
    call whose compiled output holds NaN or Inf where eager's holds Inf or NaN passes (the model's own), one that
    holds NaN where eager's is finite fails, its line counting those elements."""
    monkeypatch.syspath_prepend(str(BOOT))
    monkeypatch.setenv(contract.ENV_DIR, str(tmp_path))
    import pt2kit_capture_check as check
    import pt2kit_capture_manifest as manifest

    class Log(torch.nn.Module):
        def forward(self, x):
            return (torch.log(x),)

    gm = torch.fx.symbolic_trace(Log())
    line = manifest.new_line("eager")
    line["compile_id"] = "0/0"
    x = torch.tensor([0.0, -1.0, 1.0, 2.0])  # eager: -inf, nan, 0, log 2
    manifest.record(line, gm, [x], "handed")
    manifest.append(line)
    checked = check.Checked("nan", gm, line)
    checked.wrap(lambda x: (torch.tensor([float("nan"), float("inf"), 0.0, 0.7]),))(x)
    assert checked.on
    checked.wrap(lambda x: (torch.tensor([float("nan"), float("nan"), float("nan"), float("inf")]),))(x)
    *_, failed = (tmp_path / f"p{os.getpid()}" / contract.MANIFEST).read_text().splitlines()
    entry = msgspec.json.decode(failed, type=Entry)
    assert not checked.on and entry.call == 2
    assert entry.check.endswith(": 2 of 4 values non-finite (NaN or Inf) where eager's are finite"), entry.check
