"""The fork server keeps Popen's promises: exit codes and signals, the child's own stdout, cwd and
environment, and nothing left running after close."""

import os
import signal
import time
from pathlib import Path

import pytest

from pt2kit.minify.worker import zygote


@pytest.fixture(autouse=True, scope="module")
def _minifys_own_fork_server():
    """These test minify's own zygote: never a test run's shared server (pt2kit.runtime.worker.forkserver)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PT2KIT_FORKSERVER", raising=False)
        yield


pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="fork server needs os.fork"),
              pytest.mark.xdist_group("zygote")]  # one server for the module, on one worker


@pytest.fixture(scope="module")
def server():
    z = zygote.start({**os.environ, "ZYGOTE_TEST": "server"})
    assert z is not None
    yield z
    z.close()


def _run(z, tmp_path, body, env=None):
    script = tmp_path / "s.py"
    script.write_text(body)
    c = z.spawn("run", argv=[str(script), "arg"], cwd=str(tmp_path), env=env)
    c.stdin.close()
    out, err = c.stdout.read(), c.stderr.read()
    return c.wait(timeout=60), out.decode(), err.decode()


def test_exit_code_stdout_argv_and_cwd(server, tmp_path):
    code, out, _ = _run(server, tmp_path, "import os, sys\nprint(sys.argv[1], os.getcwd())\nraise SystemExit(1)\n")
    assert code == 1
    assert out == f"arg {tmp_path}\n"


def test_a_child_runs_as_main_with_torch_imported_but_nothing_compiled(server, tmp_path):
    # the server imported with torch asking NVML about CUDA; the child has the environment it was given
    body = ("import os, sys\nassert __name__ == '__main__'\nimport torch._dynamo.utils as u\n"
            "print(sorted(u.counters), 'torch' in sys.modules, os.environ.get('PYTORCH_NVML_BASED_CUDA_CHECK'))\n")
    code, out, err = _run(server, tmp_path, body)
    assert (code, out) == (0, "[] True None\n"), err


def test_a_signal_reads_as_popen_does_and_the_environment_is_the_one_given(server, tmp_path):
    code, out, _ = _run(server, tmp_path, "import os\nprint(os.environ.get('ZYGOTE_TEST'), flush=True)\n"
                                          "os.kill(os.getpid(), 11)\n", env={"ZYGOTE_TEST": "child"})
    assert (code, out) == (-signal.SIGSEGV, "child\n")


def test_an_exception_is_exit_1_with_its_traceback(server, tmp_path):
    code, _, err = _run(server, tmp_path, "raise ValueError('planted')\n")
    assert code == 1 and "ValueError: planted" in err


def test_close_kills_what_is_still_running(tmp_path):
    z = zygote.start(dict(os.environ))
    script = tmp_path / "sleep.py"
    script.write_text("import time\ntime.sleep(600)\n")
    c = z.spawn("run", argv=[str(script)], cwd=str(tmp_path))
    assert c.poll() is None
    z.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(c.pid, 0)
        except ProcessLookupError:
            break
        stat = f"/proc/{c.pid}/stat"  # a killed child init has not reaped yet is a zombie: gone for our purposes
        if os.path.exists(stat) and open(stat).read().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"child {c.pid} outlived the server")


def test_a_fork_after_the_preload_is_not_poisoned_for_cuda():
    import torch

    from pt2kit.minify.worker.zygote import fork_poisoned

    assert fork_poisoned() is False  # torch imported, CUDA never asked: a fork may use it
    if torch.cuda.is_available():  # asking CUDA poisons later forks, and the probe sees it
        assert fork_poisoned() is True


def test_a_child_has_inductors_machine_probes_answered(server, tmp_path):
    # the probes' private torch API: if torch renames it, this fails (and children pay the probes again)
    body = ("import torch\nfrom torch._inductor import codecache, cpu_vec_isa\n"
            "print(cpu_vec_isa.valid_vec_isa_list.cache_info().currsize, "
            "codecache.CacheBase.get_system.cache_info().currsize)\n")
    deadline = time.monotonic() + 120  # the server's prober answers them while the server serves
    while not server.warm and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.warm
    code, out, err = _run(server, tmp_path, body)
    # on a CUDA build the system probe is left to the child: it initialises CUDA, which would spoil the fork
    cpu_build = __import__("torch").version.cuda is None
    assert (code, out) == (0, "1 1\n" if cpu_build else "1 0\n"), err


def _cuda() -> bool:
    import torch

    # device_count asks NVML where it can, so this test process's own forks stay good for the test above
    return torch.cuda.device_count() > 0


@pytest.mark.skipif(not _cuda(), reason="needs a GPU (the device machine runs it)")
def test_on_a_cuda_build_a_forked_child_compiles_and_runs_a_cuda_kernel(server, tmp_path):
    # the server imported Inductor and probed the CPU without asking the CUDA driver, so its fork is good
    body = ("import torch\nf = torch.compile(lambda x: (x * 2 + 1).relu())\n"
            "print(float(f(torch.ones(4, device='cuda')).sum()), torch.cuda.is_available())\n")
    code, out, err = _run(server, tmp_path, body)
    assert (code, out) == (0, "12.0 True\n"), err


def test_the_server_lets_ctrl_c_pass_and_a_run_it_forks_takes_ctrl_c_as_python_does(server, tmp_path):
    # Ctrl-C reaches the whole group: minify stops and kills the server, which prints no traceback of its
    # own; a repro run it forks gets SIGINT as `python repro.py` would (KeyboardInterrupt)
    import signal

    body = "import signal\nprint(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    assert _run(server, tmp_path, body)[:2] == (0, "True\n")  # the server is up and serving
    server.proc.send_signal(signal.SIGINT)
    code, out, _ = _run(server, tmp_path, body)
    assert (code, out) == (0, "True\n") and server.proc.poll() is None


def test_ctrl_c_in_a_pipeline_leaves_one_line_from_minify_and_no_traceback(tmp_path):
    # `capture -- python s.py | minify` and Ctrl-C while the script runs: minify's fork server is already up
    import signal
    import subprocess
    import sys
    import time

    from pt2kit.testkit import popen

    # as a user's shell starts it (SIGINT at its default, whatever started the test run ignores)
    p = popen(["sh", "-c", f"sleep 60 | {sys.executable} -m pt2kit.minify"], start_new_session=True,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    deadline = time.monotonic() + 120
    pid = None
    while pid is None:
        assert time.monotonic() < deadline
        time.sleep(0.2)
        ps = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "-g", str(p.pid)], capture_output=True, text=True).stdout
        pid = next((int(line.split()[0]) for line in ps.splitlines() if "pt2kit.minify.worker.zygote" in line), None)

    def cpu() -> int:  # the server's CPU ticks so far: still for a second once its imports are done
        return sum(int(x) for x in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:13])

    before = -1
    while cpu() != before:  # waiting on its socket, where a KeyboardInterrupt printed a traceback
        assert time.monotonic() < deadline
        before = cpu()
        time.sleep(1)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert err.decode().strip().splitlines() == ["minify: interrupted"], err.decode()
