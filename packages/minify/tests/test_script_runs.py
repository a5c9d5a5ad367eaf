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



def test_every_run_starts_from_an_empty_inductor_cache_of_its_own(tmp_path, monkeypatch):
    """On torch 2.11 a reduced script that dropped the warm-up call a stale-dtype bug needs still "failed", from
    the FX graph cache the original's runs had filled, and its repro passed on a fresh machine. Each run (the
    script's, a candidate's, a verification's) now gets an empty cache folder, removed after it, but for the
    compiled kernels of the runs before; the user's stays as it was."""
    from pt2kit.minify.parent.script import Command, run

    user = tmp_path / "users-cache"
    user.mkdir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(user))
    script = tmp_path / "s.py"
    script.write_text("import os, pathlib, sys\n"
                      "d = pathlib.Path(os.environ['TORCHINDUCTOR_CACHE_DIR'])\n"
                      "print('repro: reproduced: ' + ','.join(sorted(p.name for p in d.iterdir())), file=sys.stderr)\n"
                      "for name in ('fxgraph', 'aotautograd', 'dynamo', 'c7'):\n"
                      "    (d / name).mkdir(exist_ok=True)\n")
    folder = tmp_path / "runs"
    folder.mkdir()
    cmd = Command([sys.executable], script, [])
    said = [run(cmd, script.read_text(), folder, 60)[:2] for _ in range(2)]
    # the compiled kernels (a code-cache folder, named by their source) carry over; nothing else does
    assert said == [(0, ""), (0, "c7")]
    assert not any(user.iterdir()) and sorted(p.name for p in folder.iterdir()) == ["candidate.py", "kernels"]
