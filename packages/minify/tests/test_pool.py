"""The worker pool: each worker's share of the cores for Inductor's compilers."""

from __future__ import annotations

import os
import threading
import time

import pytest

from pt2kit.minify.parent.pool import Pool, compile_share


@pytest.fixture(autouse=True, scope="module")
def _minifys_own_fork_server():
    """These test minify's own zygote: never a test run's shared server (pt2kit.runtime.worker.forkserver)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PT2KIT_FORKSERVER", raising=False)
        yield


# a candidate whose eager run says how many compilers its worker's Inductor runs at once
PROBE = '''
class Repro(torch.nn.Module):
    def forward(self, x):
        import os
        import torch._inductor.config as c
        env = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "0")
        raise RuntimeError(f"compile_threads {'i' * c.compile_threads} env {'i' * int(env)}")  # signatures hide numbers
'''


def _ask(pool: Pool) -> list[str]:
    payload = {"source": PROBE, "inputs": [("tensor", [2], [1], "float32", "cpu", None, None)],
               "failure": {"kind": "accuracy", "signature": "accuracy"}, "backend": "eager", "config": {},
               "dynamic": False, "seed": 0}
    answers = pool.map("query", [payload] * len(pool.workers))
    return [a["result"]["signature"] for a in answers]


def test_the_share_is_one_compiler_where_workers_outnumber_half_the_cores():
    assert [compile_share(cores, 2, {}) for cores in (1, 2, 3, 4, 16)] == [1, 1, 1, None, None]
    assert compile_share(16, 4, {}) is None and compile_share(4, 4, {}) == 1
    assert compile_share(2, 2, {"TORCHINDUCTOR_COMPILE_THREADS": "2"}) is None


@pytest.mark.skipif((os.cpu_count() or 1) >= 4, reason="two workers on a machine of 2 or 3 cores")
def test_each_worker_of_a_small_machine_runs_one_compiler():
    # every worker at Inductor's default (one compiler per core) oversubscribed a 2-core machine
    pool = Pool(2, env={k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_COMPILE_THREADS"})
    try:
        want = "eager: RuntimeError: compile_threads i env i"
        assert _ask(pool) == [want, want]
    finally:
        pool.close()


def test_the_users_compile_threads_win():
    pool = Pool(2, env={**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "3"})
    try:
        assert _ask(pool) == ["eager: RuntimeError: compile_threads iii env iii"] * 2
    finally:
        pool.close()


def test_verification_runs_are_forked_warm_without_pt2kit_variables_even_where_the_tool_had_some():
    # a PT2KIT_STORE in minify's environment made each of the 3 verification runs a fresh interpreter (5 s of
    # import torch each on a 16-core machine): torch reads no PT2KIT variable while importing, so the fork
    # server serves them, and the repro still sees none of pt2kit's variables
    from pt2kit.minify.parent.verify import RUNS, verify

    text = ("import os, sys\nours = sorted(k for k in os.environ if k.startswith('PT2KIT'))\n"
            "print('torch imported' if 'torch' in sys.modules else 'fresh interpreter', ours)\n"
            "sys.exit(1 if 'torch' in sys.modules and not ours else 0)\n")
    pool = Pool(1, env={**os.environ, "PT2KIT_STORE": "/nonexistent/store", "PT2KIT_TEST_MARK": "1"})
    try:
        if pool.zygote is None:
            pytest.skip("no fork server on this machine")
        assert verify(text, pool) == (RUNS, [])
    finally:
        pool.close()


def test_a_fork_server_started_early_is_the_pools_and_one_nobody_takes_ends_at_once():
    # minify starts its fork server at once when reading a pipe, else when a model record arrives (torch's
    # import overlaps the tools upstream); a stream with nothing to minify does not wait for an import
    # nobody needs
    import time

    from pt2kit.minify.parent.pool import Early

    unused = Early()
    assert unused.zygote is None
    unused.start()
    t = time.monotonic()
    unused.close()
    assert time.monotonic() - t < 3 and unused.zygote is None
    early = Early()
    early.start()
    early.start()  # a second model record starts nothing more
    z = early.zygote
    pool = Pool(1, early=early)
    try:
        assert z is not None and pool.zygote is z and early.zygote is None
        assert pool.map("query", []) == [] and pool.workers[0].alive
    finally:
        pool.close()
        early.close()


@pytest.fixture(scope="module")
def pool1():
    pool = Pool(1)
    yield pool
    pool.close()


def test_a_compile_error_is_verified_by_one_fresh_run_and_one_that_passes_first_gets_the_other_two(tmp_path, pool1):
    # a compile error is the compiler's answer to the program: one fresh run that fails shows it (AOT
    # Inductor's three builds ran one at a time under its lock); a first run that passes is no proof of
    # anything, so the other two run and the record says k of 3
    from pt2kit.minify.parent.verify import RUNS, verify

    assert verify("import sys\nsys.exit(1)\n", pool1, first=True) == (1, [])
    flaky = (f"import os, sys\nmark = {str(tmp_path / 'ran')!r}\nfirst = not os.path.exists(mark)\n"
             "open(mark, 'a').close()\nprint('passed' if first else 'failed')\nsys.exit(0 if first else 1)\n")
    assert verify(flaky, pool1, first=True) == (RUNS - 1, ["exit 0: passed"])


def _query(body: str) -> dict:
    source = f"class Repro(torch.nn.Module):\n    def forward(self, x):\n        {body}\n"
    return {"source": source, "inputs": [("tensor", [2], [1], "float32", "cpu", None, None)],
            "failure": {"kind": "accuracy", "signature": "accuracy"}, "backend": "eager", "config": {},
            "dynamic": False, "seed": 0}


def test_a_bisection_beside_the_verification_is_kept_only_where_a_fresh_run_failed(pool1):
    # the bisection runs beside the verification where the cores allow: where no fresh run failed it is
    # stopped mid-question (its worker killed, the pool's next question served by a fresh one) and nothing
    # of it is kept; where one did, the stage goes into the record and the repro's docstring
    from pt2kit.minify.parent.beside import Beside, side_by_side
    from pt2kit.minify.parent.bisected import DOC_MARK
    from pt2kit.minify.records import Outcome

    # a loaded 2-core machine ran the two side by side slower than one after the other
    assert [side_by_side(c, w) for c, w in ((2, 1), (4, 1), (8, 4), (16, 4))] == [False, True, False, True]
    asked = threading.Event()

    def endless(lane):
        asked.set()
        lane.map("query", [_query("import time; time.sleep(600)")])
        return {"verdict": "never"}

    b = Beside(pool1, endless)
    assert asked.wait(10)
    time.sleep(1)  # the worker is in the question
    t0 = time.monotonic()
    b.cancel()
    assert time.monotonic() - t0 < 15 and b.fields is None and b.error is None
    boom = _query("raise RuntimeError('boom')")
    assert pool1.map("query", [boom])[0]["result"]["signature"] == "eager: RuntimeError: boom"

    b = Beside(pool1, lambda lane: {"verdict": lane.map("query", [boom])[0]["result"]["signature"], "steps": 1})
    made = b.into(Outcome(1, "1 op", {"graph": 0, "phase": None}, f'"""A repro.{DOC_MARK}"""\n'))
    assert made.bisect == {"verdict": "eager: RuntimeError: boom", "steps": 1, "graph": 0, "phase": None}
    assert "\nStage (minify's bisection, with compiler_bisector's switches): eager: RuntimeError: boom\n" in made.text


def test_a_query_far_slower_than_the_others_beside_it_is_stopped_as_a_timeout(pool1):
    # drop config's singles: a setting whose drop made the compile 4x slower than the others' (vectorised
    # C++ on an AVX-512 machine) held minify 20 s, the fixed timeout; the others beside it are the measure
    quick = _query("raise RuntimeError('boom')")
    t0 = time.monotonic()
    answers = pool1.map("query", [quick, quick, _query("import time; time.sleep(600)")],
                        timeout=300, straggle=lambda s: s + 5)
    assert [a["t"] for a in answers] == ["done", "done", "timeout"]
    assert 5 <= answers[2]["s"] < 30 and time.monotonic() - t0 < 60
    assert pool1.map("query", [quick])[0]["result"]["signature"] == "eager: RuntimeError: boom"  # a fresh worker


def test_minify_reading_a_pipe_starts_its_fork_server_before_the_stream_comes_and_one_from_a_file_does_not(tmp_path):
    # in `capture -- python s.py | minify` torch's import (7.5 s on the GPU machine's CPU) overlaps the script
    import subprocess
    import sys
    import time

    def servers(pid: int) -> int:
        kids = subprocess.run(["ps", "-ww", "-o", "args=", "--ppid", str(pid)], capture_output=True, text=True).stdout
        return kids.count("pt2kit.minify.worker.zygote")

    up = subprocess.Popen(["sleep", "30"], stdout=subprocess.PIPE)
    m = subprocess.Popen([sys.executable, "-m", "pt2kit.minify"], stdin=up.stdout, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=tmp_path)
    up.stdout.close()
    try:
        deadline = time.monotonic() + 20
        while not servers(m.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert servers(m.pid) == 1  # started while the tool upstream has written nothing yet
    finally:
        up.kill()
        up.wait()
    out, err = m.communicate(timeout=60)
    assert m.returncode == 0 and b"no model records on stdin" in err and out.count(b"\n") == 1  # its header
    (tmp_path / "empty.ndjson").write_bytes(b"")
    with open(tmp_path / "empty.ndjson", "rb") as f:
        m = subprocess.Popen([sys.executable, "-m", "pt2kit.minify"], stdin=f, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=tmp_path)
        time.sleep(1)
        started = servers(m.pid)
        m.communicate(timeout=60)
    assert started == 0
