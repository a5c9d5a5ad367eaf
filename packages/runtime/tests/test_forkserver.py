"""The fork server (pt2kit.runtime.worker.forkserver): a tool's worker forked from one warm process does the job
a fresh one would, in the tool's process group and working directory, and an environment the server
did not import under gets a fresh worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pt2kit.runtime.parent.child import run_in_child
from pt2kit.runtime.parent.forkclient import ENV, serving, spawn

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fork") / "socket")
    proc = subprocess.Popen([sys.executable, "-m", "pt2kit.runtime.worker.forkserver", "--serve", path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    while not os.path.exists(path):
        time.sleep(0.05)
    yield proc, path
    proc.terminate()
    proc.wait(timeout=10)


def _job(tmp_path, path, target="whoami", **extra):
    env = {**os.environ, ENV: path, **extra}
    return run_in_child(f"child_targets:{target}", {}, run="r", store=str(tmp_path), on_record=lambda raw: None,
                        quiet=True, env=env)


def test_a_worker_is_forked_warm_in_the_tools_group_and_folder(server, tmp_path, monkeypatch):
    proc, path = server
    monkeypatch.chdir(HERE)  # the child imports child_targets from its working directory, as python -m does
    res = _job(tmp_path, path, PT2KIT_TEST_TAG="ours")
    assert res.ok, res.crash
    me = res.value
    assert me["ppid"] == proc.pid and me["torch"]  # the server's child: torch came imported
    assert me["pgid"] == os.getpgrp() and me["cwd"] == str(HERE) and me["tag"] == "ours"


def test_another_environment_gets_a_fresh_worker(server, tmp_path, monkeypatch):
    _, path = server
    monkeypatch.chdir(HERE)
    res = _job(tmp_path, path, TEST_OTHER="1")  # torch could read it at import: never forked
    assert res.ok, res.crash
    assert res.value["ppid"] == os.getpid() and not res.value["torch"] and res.value["other"] == "1"


def test_a_forked_worker_that_segfaults_is_the_same_crash_record(server, tmp_path, monkeypatch):
    _, path = server
    monkeypatch.chdir(HERE)
    c = _job(tmp_path, path, target="segfaults").crash
    assert c["signal"] == "SIGSEGV" and c["stage"] == "run" and c["last_kernel"] == "cpp_fused_relu_0"


def test_a_script_runs_as_main_with_its_exit_code_and_a_signal_reads_as_popen_says(server, tmp_path):
    _, path = server
    script = tmp_path / "s.py"
    script.write_text("import sys, torch\nprint(__name__, sys.argv[1:])\nsys.exit(7)\n")
    child = spawn(None, [str(script), "a"], {**os.environ, ENV: path}, cwd=str(tmp_path))
    assert child is not None
    child.stdin.close()
    assert child.stdout.read() == b"__main__ ['a']\n" and child.wait(timeout=30) == 7
    # an uncaught exception goes through sys.excepthook, as python's does; a path entry is importable
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "sibling.py").write_text("WHO = 'sibling'\n")
    script.write_text("import sys, sibling\nsys.excepthook = lambda *a: print('hooked', sibling.WHO)\n"
                      "raise RuntimeError('x')\n")
    child = spawn(None, [str(script)], {**os.environ, ENV: path}, path=[str(tmp_path / "lib")])
    child.stdin.close()
    assert child.stdout.read() == b"hooked sibling\n" and child.wait(timeout=30) == 1
    script.write_text("import time\ntime.sleep(60)\n")
    sleeper = spawn(None, [str(script)], {**os.environ, ENV: path})
    time.sleep(0.5)
    sleeper.send_signal(signal.SIGTERM)
    assert sleeper.wait(timeout=30) == -signal.SIGTERM


def test_only_pt2kit_modules_are_run(server):
    _, path = server
    assert spawn("os", [], {**os.environ, ENV: path}) is None


def test_a_child_whose_environment_leaves_ours_out_is_forked_by_the_server_named(server, tmp_path):
    """minify's repro runs get no PT2KIT variable, the server's address included: named apart, still forked."""
    proc, path = server
    script = tmp_path / "who.py"
    script.write_text("import os, sys\nprint(os.getppid(), 'torch' in sys.modules, os.environ.get('PT2KIT_FORKSERVER'))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PT2KIT")}
    assert spawn(None, [str(script)], env) is None  # no server named: the caller starts python itself
    child = spawn(None, [str(script)], env, server=path)
    child.stdin.close()
    assert child.stdout.read() == f"{proc.pid} True None\n".encode() and child.wait(timeout=30) == 0


def test_when_it_stops_it_counts_its_forks_and_refusals_by_reason_on_one_line(tmp_path, monkeypatch):
    path = str(tmp_path / "socket")
    proc = subprocess.Popen([sys.executable, "-m", "pt2kit.runtime.worker.forkserver", "--serve", path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while not os.path.exists(path):
        time.sleep(0.05)
    monkeypatch.chdir(HERE)
    assert _job(tmp_path, path).value["ppid"] == proc.pid
    for _ in range(2):
        assert _job(tmp_path, path, TEST_OTHER="1").value["ppid"] == os.getpid()
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    assert err.splitlines() == ["pt2kit fork server: forked 1, refused 2 (another environment (TEST_OTHER): 2)"]


def test_the_address_inductor_leaves_in_a_compiling_process_environment_does_not_stop_a_fork(server, tmp_path,
                                                                                            monkeypatch):
    proc, path = server
    monkeypatch.chdir(HERE)
    res = _job(tmp_path, path, _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR="140000000000")
    assert res.ok, res.crash
    assert res.value["ppid"] == proc.pid


def test_a_tool_with_an_inductor_cache_folder_of_its_own_is_forked_and_compiles_into_it(server, tmp_path,
                                                                                       monkeypatch):
    """A test or a script that names its own TORCHINDUCTOR_CACHE_DIR was refused (a fresh Python each time)."""
    proc, path = server
    monkeypatch.chdir(HERE)
    folder = tmp_path / "inductor"
    res = _job(tmp_path, path, target="cache_folders", TORCHINDUCTOR_CACHE_DIR=str(folder))
    assert res.ok, res.crash
    assert res.value["ppid"] == proc.pid
    assert res.value["written"].startswith(f"{folder}/") and res.value["local"].startswith(f"{folder}/cache/")


def test_serving_names_a_warm_server_for_the_block_and_leaves_nothing_after_it(tmp_path, monkeypatch):
    """What triage gives kdiff's and minify's steps: one server for the block, gone with it; inside a run that
    names one already (a test run's), none of its own."""
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.chdir(HERE)
    with serving() as named:
        path = named[ENV]
        me = _job(tmp_path, path).value
        assert me["torch"] and me["ppid"] != os.getpid()  # forked by the server: torch came imported
    assert not os.path.exists(os.path.dirname(path))
    with pytest.raises(ProcessLookupError):
        os.kill(me["ppid"], 0)
    monkeypatch.setenv(ENV, path)
    with serving() as named:
        assert named == {}


def test_a_jupyter_kernels_variables_and_those_read_at_run_time_do_not_stop_a_fork_and_reach_the_child(
        server, tmp_path, monkeypatch):
    proc, path = server
    monkeypatch.chdir(HERE)
    res = _job(tmp_path, path, target="environ", CLICOLOR="1", PAGER="cat", GIT_PAGER="cat", JPY_PARENT_PID="4242",
               MPLBACKEND="module://matplotlib_inline.backend_inline", PYDEVD_USE_FRAME_EVAL="NO",
               REPRO_DEVICE="cuda", MASTER_PORT="29511")
    assert res.ok, res.crash
    assert res.value["ppid"] == proc.pid  # forked, as the tool asked
    assert not {"matplotlib", "pydevd", "debugpy"} & set(res.value["modules"])  # what reads them, never imported
    assert res.value["env"]["MPLBACKEND"] == "module://matplotlib_inline.backend_inline"  # matplotlib reads it there
    assert res.value["env"]["JPY_PARENT_PID"] == "4242" and res.value["env"]["REPRO_DEVICE"] == "cuda"


def test_a_pythonpath_of_the_tools_own_is_forked_with_the_sys_path_a_fresh_python_has(server, tmp_path, monkeypatch):
    proc, path = server
    monkeypatch.chdir(HERE)
    helpers, startup, shadow = (tmp_path / n for n in ("helpers", "startup", "shadow"))
    for folder, name in ((helpers, "my_helper.py"), (startup, "sitecustomize.py"), (shadow, "torch.py")):
        folder.mkdir()
        (folder / name).write_text("")
    before = os.environ.get("PYTHONPATH")
    joined = os.pathsep.join([str(helpers), *filter(None, [before])])
    res = _job(tmp_path, path, target="environ", PYTHONPATH=joined)
    assert res.ok, res.crash
    assert res.value["ppid"] == proc.pid and res.value["path"][:2] == [str(HERE), str(helpers)]
    # a fresh Python would run the entry's sitecustomize at startup, or import the entry's torch: refused
    for folder in (startup, shadow):
        res = _job(tmp_path, path, target="environ", PYTHONPATH=os.pathsep.join([str(folder), *filter(None, [before])]))
        assert res.ok, res.crash
        assert res.value["ppid"] == os.getpid() and res.value["path"][1] == str(folder)


def test_forkpath_refuses_where_a_fresh_python_would_find_a_module_elsewhere(tmp_path, monkeypatch):
    import types

    from pt2kit.runtime.worker import forkpath

    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    os.mkdir(a)
    os.mkdir(b)
    assert forkpath.entries({"PYTHONPATH": f"rel:{a}:"}, "/w") == ["/w/rel", a, "/w"]  # as Python makes them
    monkeypatch.setattr(sys, "path", [str(tmp_path), a, b, *sys.path[1:]])
    assert forkpath.refusal([a, b], [a, b]) is None
    assert forkpath.refusal([a, b], [b, a]) == "another PYTHONPATH (its entries in another order)"
    assert forkpath.refusal([a, b], [b]) is None  # the server imported nothing from a
    monkeypatch.setitem(sys.modules, "from_a", types.SimpleNamespace(__file__=os.path.join(a, "from_a.py")))
    assert forkpath.refusal([a, b], [b]) == f"another PYTHONPATH (the server imported from {a})"
    assert forkpath.refusal([b], [a, b]) == "another PYTHONPATH (the server's sys.path is not as it started)"
