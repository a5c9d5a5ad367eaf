"""--executor ray on a real local Ray cluster this test starts: every job runs as a Ray task, a crash
is a crash record, and the stream holds what a local run's holds."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from brtest import MODELS

pytest.importorskip("ray")
SMALL = MODELS / "small.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    ray_bin = shutil.which("ray") or str(Path(sys.executable).parent / "ray")
    port = _free_port()
    tmp = tmp_path_factory.mktemp("ray")
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    subprocess.run([ray_bin, "start", "--head", "--port", str(port), "--num-cpus", "2", "--include-dashboard",
                    "false", "--disable-usage-stats", "--temp-dir", str(tmp)], check=True, capture_output=True,
                   env=env, timeout=180)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray_bin, "stop", "--force"], capture_output=True, env=env, timeout=120)


def test_every_job_is_a_ray_task_and_the_stream_is_a_local_runs(benchrun, cluster):
    args = [f"{SMALL}:mlp", f"{SMALL}:segfault", "--backend", "eager,aot_eager", "--repeat", "3", "--no-accuracy"]
    r = benchrun(*args, "--executor", "ray", "--ray-address", cluster)
    assert r.code == 3, r.stderr
    assert "4 job(s) submitted to Ray at " + cluster in r.stderr
    jobs = sorted((x["kind"], x["model"], x["backend"]) for x in r.records if x["kind"] in ("bench", "crash"))
    assert jobs == [("bench", "small.py:mlp", "aot_eager"), ("bench", "small.py:mlp", "eager"),
                    ("crash", "small.py:segfault", "aot_eager"), ("crash", "small.py:segfault", "eager")]
    (aot,) = [x for x in r.kind("bench") if x["backend"] == "aot_eager"]
    assert aot["compile_cold"]["total_s"] > 0 and aot["compile_warm"]["total_s"] > 0 and aot["latency"]["n"] == 3
    assert all(c["signal"] == "SIGSEGV" for c in r.kind("crash"))
    assert sorted(m["model"] for m in r.kind("model")) == ["small.py:mlp", "small.py:segfault"]
    assert len({x["run"] for x in r.records}) == 1  # the tasks' records carry this run's id


def test_a_cluster_that_is_not_there_is_one_line(benchrun):
    port = _free_port()
    r = benchrun(f"{SMALL}:mlp", "--backend", "eager", "--executor", "ray", "--ray-address", f"127.0.0.1:{port}",
                 timeout=120)
    assert r.code == 2 and r.stdout == b"", r.stderr
    assert f"benchrun: error: --ray-address 127.0.0.1:{port}: no Ray cluster answers there" in r.stderr
