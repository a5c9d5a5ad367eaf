"""The fork server keeps Popen's promises: exit codes and signals, the child's own stdout, cwd and
environment, and nothing left running after close."""

import os
import signal
import time

import pytest

from pt2kit.minify import zygote

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
    body = ("import sys\nassert __name__ == '__main__'\nimport torch._dynamo.utils as u\n"
            "print(sorted(u.counters), 'torch' in sys.modules)\n")
    code, out, err = _run(server, tmp_path, body)
    assert (code, out) == (0, "[] True\n"), err


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

    from pt2kit.minify.zygote import fork_poisoned

    assert fork_poisoned() is False  # torch imported, CUDA never asked: a fork may use it
    if torch.cuda.is_available():  # asking CUDA poisons later forks, and the probe sees it
        assert fork_poisoned() is True


def test_a_child_has_inductors_machine_probes_answered(server, tmp_path):
    # warm_inductor's private torch API: if torch renames it, this fails (and children pay the probes again)
    body = ("import torch\nfrom torch._inductor import codecache, cpu_vec_isa\n"
            "print(cpu_vec_isa.valid_vec_isa_list.cache_info().currsize, "
            "codecache.CacheBase.get_system.cache_info().currsize)\n")
    code, out, err = _run(server, tmp_path, body)
    cpu_build = __import__("torch").version.cuda is None
    assert (code, out) == (0, "1 1\n" if cpu_build else "0 0\n"), err
