"""SIGTERM and SIGINT stop a tool and its worker and leave no temporary file in the store; a worker
whose parent is killed outright stops itself; a timeout stops the worker the same way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pt2kit.testkit import popen

HERE = Path(__file__).parent


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _start(tmp_path: Path, target: str, *extra: str) -> tuple[subprocess.Popen[bytes], int, Path]:
    store, pidfile = tmp_path / "store", tmp_path / "child.pid"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    # started as a user's shell starts it: with SIGINT ignored by whatever started the test run (a
    # background job, nohup), a plain Popen's tool inherited that and never saw the SIGINT sent below
    proc = popen([sys.executable, HERE / "sigtool.py", target, store, pidfile, *extra],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(0.05)
    child = int(pidfile.read_text())
    assert list(store.rglob("*.tmp")), "the child's half-written blob should exist before the signal"
    return proc, child, store


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
@pytest.mark.parametrize("target", ["hangs_mid_write", "hangs_mid_write_deaf"])
def test_signal_stops_tool_and_worker_and_sweeps_temp_files(tmp_path, sig, code, word, target):
    proc, child, store = _start(tmp_path, target)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code
    assert err.decode().splitlines()[-1] == f"sigtool: {word}"
    assert b"Traceback" not in err
    assert _gone(child), "the worker outlived its tool"
    assert list(store.rglob("*.tmp")) == []
    assert out.count(b"\n") == 1 and out.startswith(b'{"kind":"header"')  # the stream stays whole


def test_timeout_stops_a_deaf_worker_and_sweeps(tmp_path):
    proc, child, store = _start(tmp_path, "hangs_mid_write_deaf", "1.5")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert b'"message":"timed out after 1.5s during write"' in out
    assert "m.py timed out after 1.5s during write" in err.decode()
    assert _gone(child)
    assert list(store.rglob("*.tmp")) == []


def test_worker_of_a_killed_tool_stops_itself_and_sweeps(tmp_path):
    proc, child, store = _start(tmp_path, "hangs_mid_write")
    proc.kill()
    proc.wait()
    assert _gone(child, within=10), "the orphaned worker kept running"
    assert list(store.rglob("*.tmp")) == []
