"""pt2kit capture is invisible to the command's process and loses no records (issue 43): --out's safety,
a hangup, Ctrl-Z, /dev/tty with stdin piped, inherited fds, setsid, a closed stderr, why nothing was
kept, the user's sitecustomize. Real subprocesses; the terminal ones in an interactive bash on a real
pty. Only the .pth/--rank case imports torch."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pt2kit.runtime.cli.storegc import scratch_owner
from pt2kit.schema import Crash, Header, Model, decode

FAKE = str(Path(__file__).with_name("fakechild.py"))
BIN = str(Path(sys.executable).parent)
CAPTURE = [sys.executable, "-m", "pt2kit.capture"]
pytestmark = pytest.mark.xdist_group("capture-process")


def records(data: bytes) -> list:
    return [decode(line) for line in data.splitlines()]


def capture(tmp: Path, *args: str, **kw) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CAPTURE, "--store", str(tmp / "store"), *args], capture_output=True, cwd=tmp, **kw)


def test_out_never_replaces_the_script_a_link_stdout_or_a_non_stream_and_is_found_unwritable_before_the_run(
        tmp_path):
    script = tmp_path / "train.py"
    script.write_text("open('RAN', 'w').write('ran')\n")
    (tmp_path / "old.ndjson").write_bytes(b'{"kind":"header","v":1}\n')
    (tmp_path / "link.ndjson").symlink_to("old.ndjson")
    (tmp_path / "notes.txt").write_text("my notes\n")
    py = [sys.executable, "train.py"]
    for out, line in (
        ("train.py", "--out train.py: is the same file as the command's argument train.py; writing it would "
                     "overwrite an input"),
        ("link.ndjson", "--out link.ndjson: is a symbolic link (to old.ndjson); capture replaces the file whole "
                        "and does not write through links: name the file itself, or another one"),
        ("notes.txt", "--out notes.txt: exists and is not a pt2kit record stream; capture replaces only a stream: "
                      "remove it or name another file"),
        ("nodir/x.ndjson", f"--out nodir/x.ndjson: no such directory {tmp_path}/nodir"),
        ("/dev/full", "--out /dev/full: cannot write it: No space left on device"),
    ):
        r = capture(tmp_path, "--out", out, "--", *py)
        assert (r.returncode, r.stdout, r.stderr.decode()) == (2, b"", f"capture: error: {line}\n"), out
    # --out is the very file stdout goes to: the command's own output would be buried under the records
    with open(tmp_path / "o.ndjson", "wb") as stdout:
        r = subprocess.run([*CAPTURE, "--store", str(tmp_path / "store"), "--out", "o.ndjson", "--", *py],
                           stdout=stdout, stderr=subprocess.PIPE, cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, b"capture: error: --out o.ndjson: is the same file as capture's stdout, "
                                           b"where the command's own output goes; send one of them elsewhere\n")
    assert script.read_text() == "open('RAN', 'w').write('ran')\n" and (tmp_path / "notes.txt").read_text() == \
        "my notes\n" and not (tmp_path / "RAN").exists() and not list(tmp_path.glob(".*.tmp"))
    assert (tmp_path / "link.ndjson").is_symlink()


def test_out_a_fifo_or_dev_stderr_is_written_in_place(tmp_path):
    """--out >(kdiff) and --out /dev/stderr: a pipe, written in place (not a link to refuse, nor renamed over)."""
    os.mkfifo(tmp_path / "fifo")
    reader = subprocess.Popen(["cat", str(tmp_path / "fifo")], stdout=subprocess.PIPE)
    r = capture(tmp_path, "--out", "fifo", "--", sys.executable, "-c", "print('hi')")
    assert (r.returncode, r.stdout) == (0, b"hi\n"), r.stderr
    assert isinstance(records(reader.communicate(timeout=30)[0])[0], Header)
    r = capture(tmp_path, "--out", "/dev/stderr", "--", sys.executable, "-c", "print('hi')")
    assert (r.returncode, r.stdout) == (0, b"hi\n"), r.stderr
    assert r.stderr.startswith(b"capture: running ") and b'{"kind":"header"' in r.stderr


def test_records_that_cannot_be_written_at_the_end_are_kept_in_the_store_and_the_exit_is_the_scripts(tmp_path):
    """stdout's reader is gone by the end (EPIPE): the records are saved and said, the script's exit 1 kept."""
    p = subprocess.Popen([*CAPTURE, "--store", str(tmp_path / "store"), "--", sys.executable, FAKE, "raise"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 1, err
    kept = next((tmp_path / "store").glob("capture-*.ndjson"))
    assert f"capture: cannot write the records to stdout (Broken pipe); they are kept in {kept}\n" in err
    header, model, _, _, crash = records(kept.read_bytes())
    assert isinstance(header, Header) and isinstance(model, Model) and isinstance(crash, Crash)
    assert (crash.stage, crash.exception) == ("run", "ValueError")
    assert Path(model.file).is_file() and not list((tmp_path / "store").glob(".capture-*"))


def test_inherited_fds_stay_setsid_works_and_timeout_still_kills_the_whole_tree(tmp_path):
    """fd 3 from the shell is the script's; os.setsid() works (capture no longer makes the script a group
    leader); --timeout still reaches a grandchild that left the session (capture is its subreaper)."""
    code = ("import os, subprocess, sys, time\nos.write(3, b'through fd 3')\nos.setsid()\n"
            "p = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
            "open('grandchild', 'w').write(str(p.pid))\nprint('own session', flush=True)\ntime.sleep(60)\n")
    r = subprocess.run(["bash", "-c", 'exec "$@" 3>fd3.txt', "-", *CAPTURE, "--store", "store", "--out", "r.ndjson",
                        "--timeout", "3", "--", sys.executable, "-c", code], capture_output=True, cwd=tmp_path)
    assert r.returncode == 143 and r.stdout == b"own session\n", r.stderr
    assert (tmp_path / "fd3.txt").read_bytes() == b"through fd 3"
    crash = records((tmp_path / "r.ndjson").read_bytes())[-1]
    assert crash.message == "timed out after 3s: the command's processes were killed"
    grandchild = int((tmp_path / "grandchild").read_text())
    deadline = time.time() + 10
    while _running(grandchild) and time.time() < deadline:
        time.sleep(0.1)
    assert not _running(grandchild)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_with_stderr_closed_the_command_runs_sees_it_closed_and_stdout_holds_records_only(tmp_path):
    code = "import sys; open('saw', 'w').write(str(sys.stderr is None))"
    r = subprocess.run(["bash", "-c", f'exec 2>&-; "$@" > rec.ndjson; echo "rc=$?"; {BIN}/pt2kit gc --store store '
                        "--allow-no-refs /dev/null", "-", *CAPTURE, "--store", "store", "--", sys.executable, "-c",
                        code], capture_output=True, cwd=tmp_path)
    assert r.stdout == b"rc=0\n", r.stdout  # gc's line went nowhere, not onto stdout
    assert (tmp_path / "saw").read_text() == "True"  # the script's fd 2 is closed, as without capture
    [header] = records((tmp_path / "rec.ndjson").read_bytes())
    assert header.tool == "capture"


def test_with_stdout_closed_the_records_need_out_and_the_command_sees_it_closed(tmp_path):
    # `pt2kit capture -- CMD >&-` (issue 55) ran the command and threw the records away, exit 0
    code = "import sys; open('saw', 'w').write(str(sys.stdout is None))"
    r = subprocess.run(["bash", "-c", '"$@" >&-', "-", *CAPTURE, "--store", "store", "--", sys.executable, "-c", code],
                       capture_output=True, cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, b"capture: error: stdout is closed: the records have nowhere to go\n")
    assert not (tmp_path / "saw").exists()  # nothing ran
    r = subprocess.run(["bash", "-c", '"$@" >&-', "-", *CAPTURE, "--store", "store", "--out", "rec.ndjson", "--",
                        sys.executable, "-c", code], capture_output=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "saw").read_text() == "True"  # the command's stdout is closed, as without capture
    [header] = records((tmp_path / "rec.ndjson").read_bytes())
    assert header.tool == "capture"


def test_why_nothing_was_kept_python_I_and_the_users_sitecustomize_stays_the_sitecustomize(tmp_path):
    r = capture(tmp_path, "--", sys.executable, "-I", "-c", "pass")
    assert r.returncode == 0 and r.stderr.endswith(
        b"capture: no graph was captured: capture's boot never loaded in the command's Python (python -I and -E "
        b"ignore PYTHONPATH, through which capture hooks in; run python without them)\n"), r.stderr
    # no Python at all (issue 55: `ls` and a shell script whose comment says python were told about -I and -E)
    (tmp_path / "run.sh").write_text("#!/bin/sh\n# not python3 -I\ntrue\n")
    (tmp_path / "run.sh").chmod(0o755)
    for cmd in ("ls", "./run.sh"):
        r = capture(tmp_path, "--", cmd)
        assert r.returncode == 0 and r.stderr.endswith(
            f"capture: no graph was captured: {cmd} is not Python, and it started no Python that loaded capture's "
            "boot (capture keeps what torch.compile compiles in the Python processes a command starts)\n".encode()
        ), r.stderr
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text("X = 42\n")
    r = capture(tmp_path, "--out", "r.ndjson", "--", sys.executable, "-c",
                "import sitecustomize; print(sitecustomize.X, sitecustomize.__file__)",
                env={**os.environ, "PYTHONPATH": str(tmp_path / "site")})
    assert (r.returncode, r.stdout) == (0, f"42 {tmp_path}/site/sitecustomize.py\n".encode()), r.stderr


def test_a_venv_whose_pth_imports_torch_is_hooked_and_rank_99_says_what_it_dropped(tmp_path):
    """torch imported by a .pth file, before sitecustomize: the boot hooks it then (it compiled a graph,
    seen); --rank 99 keeps none, and says so instead of 'no graph was compiled'."""
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")], check=True)
    site = next((tmp_path / "v" / "lib").glob("python*/site-packages"))
    (site / "aa_torch_first.pth").write_text(f"{sysconfig.get_paths()['purelib']}\nimport torch\n")
    code = "import torch\nprint(torch.compile(lambda x: x.sin() + 1, backend='eager')(torch.ones(3)).sum().item())\n"
    r = capture(tmp_path, "--rank", "99", "--", str(tmp_path / "v" / "bin" / "python"), "-c", code)
    assert r.returncode == 0 and r.stderr.endswith(
        b"capture: 1 graph compiled on rank 0; --rank 99 kept none (--rank all keeps every rank's)\n"), r.stderr


def test_sigkilled_capture_leaves_a_scratch_dir_that_gc_sweeps(tmp_path):
    store = tmp_path / "store"
    p = subprocess.Popen([*CAPTURE, "--store", str(store), "--", sys.executable, FAKE, "sleep"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not list(store.glob(".capture-*/p*/graphs.ndjson")):
        time.sleep(0.1)
    [scratch] = store.glob(".capture-*")
    child = int(next(scratch.glob("p*")).name[1:])
    p.kill()
    p.wait()
    os.kill(child, signal.SIGKILL)
    (live := store / ".capture-live").mkdir()  # a capture still running: its owner is this very process
    (live / "owner").write_text(scratch_owner())
    r = subprocess.run([f"{BIN}/pt2kit", "gc", "--store", str(store), "--allow-no-refs", "/dev/null"],
                       capture_output=True)
    assert r.returncode == 0 and f"pt2kit: removed {scratch}: the scratch dir of a pt2kit capture that is gone\n" \
        in r.stderr.decode(), r.stderr
    assert not scratch.exists() and live.is_dir()


# -- the terminal: an interactive bash on a pty, as a user at a terminal (or over ssh) runs capture ---------

class Terminal:
    def __init__(self, cwd: Path) -> None:
        env = {**os.environ, "PS1": "$ ", "TERM": "dumb", "PATH": f"{BIN}:{os.environ['PATH']}",
               "PT2KIT_STORE": str(cwd / "store")}
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # a login's shell: signals at their defaults, even if the test runner ignores some
            for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.chdir(cwd)
            os.execve("/bin/bash", ["bash", "--norc", "--noprofile", "-i"], env)
        self.out = b""

    def expect(self, text: bytes, timeout: float = 60, after: bytes = b"") -> None:
        """Wait for ``text`` on the terminal (after the last ``after`` seen: a prompt printed anew)."""
        deadline = time.time() + timeout
        while text not in self.since(after):
            assert time.time() < deadline, f"no {text!r} in {self.out[-800:]!r}"
            if select.select([self.fd], [], [], 0.2)[0]:
                try:
                    self.out += os.read(self.fd, 4096)
                except OSError:
                    break
        assert text in self.since(after), self.out[-800:]

    def since(self, after: bytes) -> bytes:
        """What the terminal showed after the last ``after`` (all of it for b"", none before it shows)."""
        return self.out if not after else self.out[self.out.rfind(after):] if after in self.out else b""

    def send(self, text: bytes) -> None:
        os.write(self.fd, text)

    def read(self, seconds: float) -> None:
        """What the terminal shows for ``seconds``."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            if select.select([self.fd], [], [], 0.1)[0]:
                try:
                    self.out += os.read(self.fd, 4096)
                except OSError:
                    return


def test_ctrl_z_gives_the_shell_back_getpass_reads_the_terminal_and_a_hangup_keeps_the_records(tmp_path):
    t = Terminal(tmp_path)
    try:
        t.expect(b"$ ")
        # Ctrl-Z: the script and capture stop, bash takes the terminal back; fg continues both
        t.send(b"pt2kit capture --out r1.ndjson -- python -c \"x = input('ready' + '> '); print('got', x)\"\n")
        t.expect(b"ready> ")  # the script's prompt (the command line as typed reads 'ready' + '> ')
        t.send(b"\x1a")
        t.expect(b"Stopped")
        t.expect(b"$ ", after=b"Stopped")  # bash's prompt: keys typed before it reach no one (a lost 'f')
        # bash may still flush what is typed just after that prompt, as it sets the terminal up again (a clean
        # clone's CI under load lost the 'f' and bash ran 'g'): type fg again until it is fg that runs
        for tries in range(1, 4):
            lost = t.out.count(b"command not found")
            time.sleep(0.5)
            t.send(b"fg\n")
            t.read(1.0)
            if t.out.count(b"command not found") == lost:
                break
            assert tries < 3, t.out[-800:]
        t.send(b"hi\n")
        t.expect(b"got hi")
        t.send(b"echo rc=$?\n")
        t.expect(b"rc=0")
        # stdin piped, the password read from /dev/tty: the script is in the terminal's foreground group
        t.send(b"echo DATA | pt2kit capture --out r2.ndjson -- python -c \"import getpass, sys; "
               b"d = sys.stdin.read().strip(); p = getpass.getpass('pw' + ': '); print('read', d, p)\"\n")
        t.expect(b"pw: ")
        t.send(b"secret\n")
        t.expect(b"read DATA secret")
        # the ssh session drops: the terminal hangs up while the script runs
        t.send(f"pt2kit capture --out r3.ndjson -- python {FAKE} sleep\n".encode())
        t.expect(b"hello from the script")
        store = tmp_path / "store"
        while not list(store.glob(".capture-*/p*/graphs.ndjson")):
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        os.close(t.fd)  # the hangup
    deadline = time.time() + 30
    while (list(store.glob(".capture-*")) or not (tmp_path / "r3.ndjson").exists()) and time.time() < deadline:
        time.sleep(0.2)
    os.waitpid(t.pid, 0)
    *_, model, crash = records((tmp_path / "r3.ndjson").read_bytes())
    assert model.model == "fakechild.py[0/1]" and (crash.signal, crash.exitcode) == ("SIGHUP", -1)
    assert not list(store.glob(".capture-*"))


def test_a_process_log_is_searched_for_dynamo_start_a_chunk_at_a_time(tmp_path):
    # a process that kept no graph has its trace in the header only if Dynamo started a frame in it; the log is
    # searched in chunks (never read whole), so a mark split across two chunks must still be found
    from pt2kit.capture.drive import _mentions

    mark = b'"dynamo_start"'
    log = tmp_path / "dedicated_log_torch_trace_1.log"
    for data, found in [(b"x" * 10 + mark, True), (mark[:-1], False), (b"", False), (b"a" * 5 + mark + b"b", True)]:
        log.write_bytes(data)
        assert all(_mentions(log, mark, chunk) is found for chunk in (1, 3, 7, 13, 100)), (data, found)
