from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.parent.child import run_in_child

HERE = Path(__file__).parent


def go(target, payload=None, tmp_path=Path("."), fresh=False, **kw):
    env = _env(fresh)
    got: list[bytes] = []
    res = run_in_child(f"child_targets:{target}", payload or {}, run="run-7", store=str(tmp_path),
                       on_record=got.append, quiet=True, env=env, **kw)
    return res, [msgspec.json.decode(r) for r in got]


def _env(fresh=False):
    """The test's environment with child_targets importable; ``fresh``: no fork server named (a test run's would
    fork the worker from a process that imported and probed everything already)."""
    from pt2kit.runtime.parent.forkclient import ENV

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    if fresh:
        env.pop(ENV, None)
    return env


def test_records_arrive_whole_and_prints_do_not_leak(tmp_path):
    res, recs = go("emits_and_prints", {"n": 3}, tmp_path)
    assert res.ok and res.value == {"graphs": 3}
    assert [r["nodes"] for r in recs] == [1, 2, 3] and {r["run"] for r in recs} == {"run-7"}


def test_segfault_becomes_a_crash_with_stage_signal_and_stack(tmp_path):
    res, recs = go("segfaults", tmp_path=tmp_path)
    assert len(recs) == 1  # the record sent before the crash survives
    c = res.crash
    assert c["stage"] == "run" and c["signal"] == "SIGSEGV" and c["exitcode"] == -11
    assert c["last_kernel"] == "cpp_fused_relu_0"
    assert "Segmentation fault" in c["stderr_tail"] and "child_targets.py" in c["stderr_tail"]


def test_abort_is_sigabrt(tmp_path):
    res, _ = go("aborts", tmp_path=tmp_path)
    assert res.crash["signal"] == "SIGABRT" and res.crash["stage"] == "compile"


def test_exception_is_a_crash_with_type_and_whole_message(tmp_path):
    from pt2kit.runtime.common.text import summary_line

    res, _ = go("raises", tmp_path=tmp_path)
    assert res.crash["exception"] == "RuntimeError"
    # the whole text: a compiler's first line is often only "backend='inductor' raised:"
    assert res.crash["message"] == "inductor lowering failed\nsecond line"
    assert summary_line(res.crash["message"]) == "inductor lowering failed"
    assert summary_line("backend='inductor' raised:\nRuntimeError: Cannot view a tensor") == \
        "backend='inductor' raised: RuntimeError: Cannot view a tensor"
    assert res.crash["stage"] == "compile" and res.crash["exitcode"] == 3
    assert "Traceback" in res.crash["stderr_tail"]


def test_usage_error_in_child_is_raised_in_parent(tmp_path):
    with pytest.raises(UsageError, match=r"^m.py: defines no `example_inputs`$"):
        go("bad_input", tmp_path=tmp_path)


def test_exit_without_result_is_a_crash(tmp_path):
    res, _ = go("exits_quietly", tmp_path=tmp_path)
    assert not res.ok and "exited with code 0" in res.crash["message"]


def test_a_model_printing_without_newlines_is_read_in_bounded_pieces():
    import collections
    import io
    import threading

    from pt2kit.runtime.parent.child import STDERR_TAIL_LINES, _pump_stderr

    said = b"x" * (8 << 20) + b"\nthe last line\n"
    tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
    _pump_stderr(io.BufferedReader(io.BytesIO(said)), tail, False, threading.Event())
    assert max(len(t) for t in tail) == 1 << 16 and tail[-1] == "the last line\n"
    assert "".join(tail).endswith("x" * 100 + "\nthe last line\n")


def test_a_worker_started_early_imports_ahead_and_takes_the_job_and_a_dead_one_is_replaced(tmp_path):
    # capture starts its check's child beside the script, so torch's import is done by the time the job comes
    from pt2kit.runtime.parent.child import start_worker

    env = _env(fresh=True)
    early = start_worker(env, preload=("wave", "no_such_module_here"))  # one that fails to import is no error
    res, _ = go("imported", {"names": ["wave", "colorsys"]}, tmp_path, proc=early)
    assert res.ok and res.value == {"pid": early.pid, "had": [True, False]}
    dead = start_worker(env)
    dead.kill()
    dead.wait()
    res, _ = go("imported", {"names": ["wave"]}, tmp_path, proc=dead, fresh=True)
    assert res.ok and res.value["pid"] != dead.pid and res.value["had"] == [False]


# a tool reading a pipe warms its first worker while the tool upstream still runs (Session.warm)
WARM = """
import json, os, sys
from pt2kit.runtime.parent.session import Session
with Session("t", "0", store=sys.argv[1], quiet=True) as s:
    s.warm(("wave",))
    spare = s._spare.pid if s._spare is not None else None
    sys.stdin.read()  # what the tool upstream writes, to its end
    if sys.argv[2] == "run":
        res = s.run_child("m", "child_targets:imported", {"names": ["wave"]}, on_record=lambda raw: None)
        print(json.dumps({"spare": spare, "ran": res.value}), file=sys.stderr)
    else:
        print(json.dumps({"spare": spare}), file=sys.stderr)
    s.done(0)
"""


def _warm(tmp_path, how, stdin):
    import json
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-c", WARM, str(tmp_path), how], stdin=stdin, capture_output=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stderr.decode().strip().splitlines()[-1])


def test_a_tool_reading_a_pipe_runs_its_first_model_in_the_worker_it_warmed_and_stops_one_unused(tmp_path):
    import subprocess

    up = subprocess.Popen(["sh", "-c", "sleep 1; echo upstream"], stdout=subprocess.PIPE)
    got = _warm(tmp_path, "run", up.stdout)
    assert got["spare"] is not None and got["ran"] == {"pid": got["spare"], "had": [True]}
    up = subprocess.Popen(["sh", "-c", "sleep 1; echo upstream"], stdout=subprocess.PIPE)
    unused = _warm(tmp_path, "none", up.stdout)["spare"]
    with pytest.raises(ProcessLookupError):  # stopped and reaped when the tool exited
        os.kill(unused, 0)


def test_a_tool_reading_a_file_warms_nothing(tmp_path):
    (tmp_path / "stream").write_text("upstream\n")
    with open(tmp_path / "stream", "rb") as f:
        got = _warm(tmp_path, "run", f)
    assert got["spare"] is None and got["ran"]["had"] == [False]


def test_work_done_ahead_of_the_job_runs_at_a_lower_priority_and_the_job_at_the_one_before(tmp_path):
    from pt2kit.runtime.parent.child import start_worker
    from pt2kit.runtime.worker.main import PRELOAD_NICE, ahead_of_the_job

    if os.geteuid() != 0:
        pytest.skip("a priority is given back only with the privilege to raise it")
    before = os.getpriority(os.PRIO_PROCESS, 0)
    with ahead_of_the_job():
        assert os.getpriority(os.PRIO_PROCESS, 0) == before + PRELOAD_NICE
    assert os.getpriority(os.PRIO_PROCESS, 0) == before
    res, _ = go("priority", {}, tmp_path, proc=start_worker(_env(fresh=True), preload=("wave",)))
    assert res.ok and res.value["nice"] == before


def test_a_compiling_tools_worker_has_inductors_machine_probes_answered_before_its_job(tmp_path):
    # warm_inductor's private torch API: if torch renames it, this fails (and the first compile pays them:
    # 30 s and more a process on the GPU machine's CPU)
    from pt2kit.runtime.parent.child import COMPILER, start_worker

    res, _ = go("probed", {"wait": 120}, tmp_path, proc=start_worker(_env(fresh=True), preload=COMPILER))
    assert res.ok and res.value == {"isa": True, "system": True}
    res, _ = go("probed", {"wait": 2}, tmp_path, fresh=True)  # a worker not warmed: nothing answered, nor being answered
    assert res.ok and res.value == {"isa": False, "system": False}
