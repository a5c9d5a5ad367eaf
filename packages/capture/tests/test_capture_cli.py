"""pt2kit capture's parent, against a stand-in child (fakechild.py writes what the boot writes, stdlib only):
what the user sees: exit codes, stdout bytes, the records' fields, the store, and no scratch dir left."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from pt2kit.schema import Crash, Model, decode

FAKE = str(Path(__file__).with_name("fakechild.py"))
pytestmark = pytest.mark.xdist_group("capture-cli")


def capture(store: Path, *args: str, via: tuple[str, ...] = ("pt2kit.capture",)) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", *via, "--store", str(store), *args], capture_output=True)


def records(out: bytes) -> list:
    return [decode(line) for line in out.splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    # `pt2kit capture` (runtime's group) hands its command line to pt2kit-capture: the same run
    via = {"none": ("pt2kit.runtime", "capture")}
    return store, {mode: capture(store, "--", sys.executable, FAKE, mode, via=via.get(mode, ("pt2kit.capture",)))
                   for mode in ("ok", "segv", "raise", "none")}


def test_plain_run_writes_a_model_record_per_graph_and_keeps_the_script_stdout_off_ours(runs):
    store, r = runs[0], runs[1]["ok"]
    assert r.returncode == 0, r.stderr
    header, first, second, raised = records(r.stdout)
    assert header.tool == "capture" and [first.model, second.model] == ["fakechild.py[0/0]", "fakechild.py[0/1]"]
    # the graph its backend raised on has a crash record naming it, so `| minify` minifies that compile error
    assert isinstance(raised, Crash) and (raised.model, raised.stage, raised.exception, raised.message) == (
        "fakechild.py[0/1]", "compile", "RuntimeError", "boom")
    assert b"hello from the script\n" in r.stderr and b"hello" not in r.stdout
    c = second.captured
    assert (c.compile_id, c.backend, c.function, c.grad, c.rank, c.values) == ("0/1", "inductor", "forward", True,
                                                                               None, "small")
    assert c.source == f"{FAKE}:12" and c.error == "RuntimeError: boom" and c.command == [sys.executable, FAKE, "ok"]
    # the model file is in the store under its sha256; the parameter input counts as a parameter, not an input
    code = Path(second.file).read_bytes()
    assert second.file == str(store / c.code.path) and hashlib.sha256(code).hexdigest() == c.code.sha256
    assert code.startswith(b"# graph 0/1") and [i.name for i in second.inputs] == ["L_x_"]
    assert (second.parameters, second.trainable, second.frozen, second.device) == (32, 32, 0, "cpu")
    # the script trained through it (grad): downstream tools run it as a training step; the first did not
    assert second.settings == {"inductor.fallback_random": "True"} and second.train is True and first.train is False
    tensor = hashlib.sha256(b"not really a tensor \x00").hexdigest()
    assert (store / "blobs" / tensor[:2] / f"{tensor}.pt").is_file()
    assert c.trace is not None and (store / c.trace.path).read_bytes().startswith(b"V0101")
    assert b"capture: fakechild.py[0/1]: forward at " in r.stderr and b"its backend raised RuntimeError: boom" in r.stderr
    assert r.stderr.endswith(b"capture: 2 graphs from 1 process\n")
    assert not list(store.glob(".capture-*"))  # the scratch dir is gone


def test_a_segfault_in_a_compiled_call_gives_139_its_graph_and_a_crash_naming_it(runs):
    r = runs[1]["segv"]
    assert r.returncode == 139, r.stderr
    _, model, crash, end = records(r.stdout)
    assert model.model == "fakechild.py[0/0]" and Path(model.file).is_file()
    assert (crash.model, crash.stage, crash.signal, crash.step) == ("fakechild.py[0/0]", "run", "SIGSEGV", 1)
    assert (end.model, end.stage, end.signal, end.exitcode) == (None, "run", "SIGSEGV", -11)
    assert b"capture: the command was killed by SIGSEGV (exit 139)\n" in r.stderr
    # the killed call's line holds its graph's model file: one graph, checked once (it said "2 captured graphs")
    assert b"capture: checking that 1 captured graph runs here\n" in r.stderr, r.stderr


def test_a_script_that_raises_exits_1_with_its_exception(runs):
    r = runs[1]["raise"]
    assert r.returncode == 1
    crash = records(r.stdout)[-1]
    assert type(crash).__name__ == "Crash" and crash.exception == "ValueError"
    assert (crash.message, crash.exitcode, crash.signal) == ("bad batch", 1, None)
    assert b"capture: the command failed (exit 1): ValueError: bad batch\n" in r.stderr


def test_a_script_that_compiles_nothing_exits_0_and_says_so(runs):
    r = runs[1]["none"]
    assert r.returncode == 0 and [h.argv[:2] for h in records(r.stdout)] == [["capture", "--store"]]
    assert r.stderr.endswith(b"capture: no graph was compiled (torch.compile handed its backend none: the command "
                             b"called no compiled function, or Dynamo ran every frame eagerly; TORCH_LOGS=graph_breaks "
                             b"says why)\n")


def test_out_file_takes_the_records_and_leaves_the_script_stdout_on_stdout(tmp_path):
    out = tmp_path / "run.ndjson"
    r = capture(tmp_path / "s", "--out", str(out), "--graphs", "0/1", "--", sys.executable, FAKE, "ok")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"hello from the script\n"
    assert [m.model for m in records(out.read_bytes())[1:] if isinstance(m, Model)] == ["fakechild.py[0/1]"]
    r = capture(tmp_path / "s", "--graphs", "first", "--rank", "all", "--", sys.executable, FAKE, "ok")
    assert [m.model for m in records(r.stdout)[1:]] == ["fakechild.py[0/0]"]


def test_bad_usage_is_one_line_exit_2_and_nothing_runs(tmp_path):
    for args, line in (
        (["--graphs", "0-1", "--", "true"], "capture: error: --graphs 0-1: expected all, first, failing or compile "
         "ids such as 0/1,3/0 (not '0-1')"),
        (["--rank", "-1", "--", "true"], "capture: error: --rank -1: expected >= 0"),
        ([], "capture: error: no command to run: give it after --, e.g. pt2kit capture -- python train.py"),
        (["--", "no-such-command-here"], "capture: error: no-such-command-here: command not found"),
        (["--", f"{tmp_path}/nope.py"], f"capture: error: {tmp_path}/nope.py: no such file or directory"),
    ):
        r = capture(tmp_path / "s", *args)
        assert (r.returncode, r.stdout, r.stderr.decode()) == (2, b"", line + "\n")
    assert not (tmp_path / "s").exists()


def test_timeout_kills_the_group_and_says_so(tmp_path):
    r = capture(tmp_path / "s", "--timeout", "1", "--", sys.executable, FAKE, "sleep")
    assert r.returncode == 128 + 15, r.stderr
    *_, model, crash = records(r.stdout)
    assert model.model == "fakechild.py[0/1]" and type(crash).__name__ == "Crash"
    assert crash.signal == "SIGTERM" and crash.message == "timed out after 1s: the command's processes were killed"


def test_help_imports_no_torch():
    code = ("import sys\nfrom pt2kit.capture.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "import pt2kit.capture.drive, pt2kit.capture.records\nassert 'torch' not in sys.modules, 'torch'\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Usage: pt2kit capture [OPTIONS] [-- COMMAND [ARGS...]]" in r.stdout


def test_ctrl_c_stops_the_command_writes_what_it_captured_and_removes_the_scratch_dir(tmp_path):
    import signal
    import time

    p = subprocess.Popen([sys.executable, "-m", "pt2kit.capture", "--store", str(tmp_path), "--", sys.executable, FAKE,
                          "sleep"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    while not list(tmp_path.glob(".capture-*/p*/graphs.ndjson")):
        time.sleep(0.1)
    time.sleep(0.5)  # both lines written: the script sleeps after them
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    *_, model, crash = records(out)
    assert model.model == "fakechild.py[0/1]" and (crash.signal, crash.exitcode) == ("SIGINT", -2)
    assert err.endswith(b"capture: interrupted\n") and not list(tmp_path.glob(".capture-*"))


def test_a_script_reading_the_terminal_gets_it_and_is_not_stopped(tmp_path):
    """The command is in the terminal's foreground group (capture's own, as with timeout --foreground):
    in a group of its own, input() stopped the script (SIGTTIN) for good."""
    import os
    import pty
    import select
    import time

    script = "x = input('name? '); print('got', x)"
    argv = [sys.executable, "-m", "pt2kit.capture", "--out", str(tmp_path / "r.ndjson"), "--", sys.executable, "-c",
            script]
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session whose controlling terminal is the pty, as a shell's command
        os.environ["PT2KIT_STORE"] = str(tmp_path / "store")
        os.execv(argv[0], argv)
    out, sent, deadline = b"", False, time.time() + 60
    while time.time() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            try:
                data = os.read(fd, 1024)
            except OSError:  # the pty's other end closed
                break
            if not data:
                break
            out += data
        if not sent and b"name? " in out:
            os.write(fd, b"hi\n")
            sent = True
    if time.time() >= deadline:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    assert b"got hi" in out and os.waitstatus_to_exitcode(status) == 0, out[-500:]


def test_a_patch_that_raises_at_torchs_import_is_named_not_guessed(tmp_path):
    # a stale pt2kit_portable first on a child's sys.path made a patch's import raise; capture said "torch was
    # imported before capture could hook it". Planted here: the script blocks one patch module's import
    script = tmp_path / "s.py"
    script.write_text("import sys\nsys.modules['pt2kit_capture_patch_aoti'] = None\nimport torch\n")
    r = capture(tmp_path / "store", "--", sys.executable, str(script))
    assert r.returncode == 0
    assert r.stderr.decode().splitlines()[-1] == (
        "capture: no graph was captured: capture's hook raised when torch was imported, in 1 process: "
        "ModuleNotFoundError: import of pt2kit_capture_patch_aoti halted; None in sys.modules")
