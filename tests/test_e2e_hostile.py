"""Every tool, as a new user's worst input would run it: bad flag values are one line and exit 2,
SIGTERM stops the tool and its worker and leaves no temporary file in the store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples" / "tinynet.py"


@pytest.mark.parametrize("tool", ["fxcheck", "kdiff", "guardscan", "aotiprint"])
@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_timeout_must_be_a_positive_finite_number(tmp_path, tool, value):
    r = subprocess.run([sys.executable, "-m", f"pt2kit.{tool}", str(MODEL), "--timeout", value],
                       capture_output=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode().count("\n") == 1 and "expected a finite number > 0" in r.stderr.decode()


def _workers(parent: int) -> set[int]:
    """The tool's own worker processes (children of its pid), not other runs' on this machine."""
    out = subprocess.run(["pgrep", "-P", str(parent), "-f", "pt2kit.runtime.worker.main"], capture_output=True,
                         text=True).stdout
    return {int(x) for x in out.split()}


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("tool", ["kdiff", "guardscan"])
def test_sigterm_mid_run_is_143_and_leaves_no_worker_and_no_temp_file(tmp_path, tool):
    store = tmp_path / "store"
    # a worker of its own, its child: never one a test run's fork server forks (found by parent pid here)
    env = {k: v for k, v in os.environ.items() if k != "PT2KIT_FORKSERVER"}
    p = subprocess.Popen([sys.executable, "-m", f"pt2kit.{tool}", str(MODEL), "--store", str(store)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path, env=env)
    deadline = time.monotonic() + 60
    while not (workers := _workers(p.pid)):  # wait until its worker is up and working
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.1)
    time.sleep(2.0)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143
    assert err.decode().splitlines()[-1] == f"{tool}: terminated" and b"Traceback" not in err
    time.sleep(0.5)
    assert not [w for w in workers if _alive(w)]
    assert [f for f in store.rglob("*") if f.name.endswith(".tmp")] == []
    assert all(line.startswith(b"{") for line in out.splitlines())
