"""What a script reduction costs (issue 57: each Dynamo bug's reduction ran its whole 300 s budget): a
candidate pysource-minimize asks again is answered by its first run, and one that lacks the statement the
script's own check failed at (the signature's `` at: ``) cannot fail so and is answered without a run. The
script (scripts/padded_guard.py) needs no torch: each candidate is a fork, so the reduction ends on its own."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import sys
import warnings
from pathlib import Path

import pytest
from mntest import minify_in, run_repro

from pt2kit.minify.parent.scriptstage import OFF
from pt2kit.schema import BlobRef, Crash, Header
from pt2kit.schema.stream import encode

SCRIPT = Path(__file__).parent / "scripts" / "padded_guard.py"


def _ends(text: str, env: dict[str, str]) -> str | None:
    """The AssertionError's message ``text`` ends with under ``env`` (None: it ran through)."""
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, v in env.items():
            mp.setenv(k, v)
        try:
            exec(compile(text, "candidate.py", "exec"), {"__name__": "__main__"})
        except AssertionError as e:
            return str(e)
        except Exception as e:
            return repr(e)
    return None


def test_a_reduction_runs_only_candidates_that_can_fail_so_and_each_once(tmp_path):
    import pysource_minimize

    shutil.copy(SCRIPT, tmp_path / SCRIPT.name)
    env = {"v": 1, "run": "c"}
    trace = BlobRef(path="blobs/ab/ab.log", sha256="ab" * 32, size=1, media_type="text/plain")
    recs = [Header(**env, tool="capture", tool_version="0", argv=["pt2kit", "capture", "--", sys.executable, SCRIPT.name],
                   time="t", host="h", python="3.11", store=str(tmp_path / "store"), traces=[trace]),
            Crash(**env, stage="run", exitcode=1, exception="AssertionError", message="the compiled run differs")]
    r = minify_in(tmp_path, "--timeout", "120", "--no-bisect", "-o", str(tmp_path / "repro.py"), store=tmp_path / "store",
                  stdin=b"".join(encode(x) + b"\n" for x in recs), timeout=300)
    assert r.code == 1, r.stderr
    said = re.search(r"padded_guard.py: reduced from 12 to (\d+) lines in (\d+) runs, \d+ s; repro.py fails so in 2 "
                     r"of 2 fresh runs", r.stderr)
    assert said, r.stderr
    # what pysource-minimize asks of the same script with the same answers: every text, and those distinct
    # that hold the failing statement (the only ones run)
    at = "assert os.environ.get('TORCHDYNAMO_DISABLE') == '1', 'the compiled run differs'"
    asked: list[str] = []

    def fails(text: str) -> bool:  # minify's rule, run in this process: the failure compiled, none without
        asked.append(text)
        return at in text and _ends(text, {}) == "the compiled run differs" and _ends(text, OFF) is None

    pysource_minimize.minimize(SCRIPT.read_text(), fails)
    runnable = {t for t in asked if at in t}
    assert int(said[2]) <= len(runnable) < len(asked) / 2, (said[0], len(runnable), len(asked))
    user = (tmp_path / "repro.py").read_text().split("# ---- the user's script, reduced ----\n")[1]
    assert "def make" not in user and "print(" not in user and at in user, user
    p = run_repro(tmp_path / "repro.py")
    assert p.returncode == 1 and p.stderr.rstrip().endswith(
        "repro: reproduced: AssertionError: the compiled run differs at: " + at), p.stderr


def test_every_candidate_and_the_repro_run_with_the_compile_caches_off_unless_the_environment_sets_them():
    """On torch 2.11 a reduced script that dropped the warm-up call a stale-dtype bug needs still "failed", from
    the FX graph cache the original's runs had filled, and its repro passed on a fresh machine. A candidate is a
    fresh interpreter (torch imported after the check) or a fork of one that imported torch (before it): both
    read the caches off, and a user's own setting stands."""
    import os
    import subprocess

    from pt2kit.minify.parent.script import check

    show = ("import torch._inductor.config as i, torch._functorch.config as f;"
            "print(i.fx_graph_cache, f.enable_autograd_cache)")
    text = check("X").replace("sys.excepthook = _judged", "")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHINDUCTOR_")}
    fresh = f"exec({text!r})\n{show}"
    forked = f"import torch._inductor.config, torch._functorch.config\nexec({text!r})\n{show}"
    said = [subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True,
                           timeout=120).stdout.split()
            for code, extra in ((fresh, {"TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}), (forked, {}))]
    assert said == [["False", "True"], ["False", "False"]]
