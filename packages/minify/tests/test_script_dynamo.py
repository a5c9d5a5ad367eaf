"""A Dynamo wrong result no captured graph shows (issue 57, class 5), on a bug still live on torch 2.13
(pytorch#196173: an identity test folded without an identity guard, so the compiled code keeps its first
branch; scripts/identity_guard.py, the issue's own code): the script's own assertion at its own line is the
failure. minify reduces the script into a repro.py that fails alone (exit 1), runs through with torch.compile
disabled (exit 0, what the fixed compiler would do: the failure is the compiler's), and names its stage as
PyTorch's own switches show it (TORCH_BISECT_BACKEND=eager fails: Dynamo). A script failing the same way with
torch.compile disabled (scripts/own_assert.py) is the user's own bug: one line, exit 2, no repro.

The capture stream is written here as capture writes it for such a run (its header's command, the script's
own crash): the capture run itself costs 20 s on 2 cores, and triage's routing of it is tested in
packages/triage (test_triage_cli, test_bugreport)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from mntest import minify_in, run_repro

from pt2kit.schema import BlobRef, Crash, Error, Header
from pt2kit.schema.stream import encode

SCRIPTS = Path(__file__).parent / "scripts"
SIG = ("AssertionError: call <n>: eager [-<n>, -<n>], compiled [<n>, <n>] at: assert torch.equal(e, c), "
       "f'call {i}: eager {e.tolist()}, compiled {c.tolist()}'")

pytestmark = pytest.mark.xdist_group("script-dynamo")


def _minify(d: Path, script: str, message: str, *flags: str, refused: str | None = None):
    """``capture -- python SCRIPT | minify FLAGS``, the capture stream as capture writes it for that run (and
    where ``refused``, kdiff's `error` record of a graph it could not judge)."""
    shutil.copy(SCRIPTS / script, d / script)
    env = {"v": 1, "run": "c"}
    trace = BlobRef(path="blobs/ab/ab.log", sha256="ab" * 32, size=1, media_type="text/plain")  # its TORCH_TRACE
    recs = [Header(**env, tool="capture", tool_version="0", argv=["pt2kit", "capture", "--", sys.executable, script],
                   time="t", host="h", python="3.11", store=str(d / "store"), traces=[trace]),
            Crash(**env, stage="run", exitcode=1, exception="AssertionError", message=message),
            *([Error(v=1, run="k", message=refused, exit_code=2)] if refused else [])]
    return minify_in(d, *flags, store=d / "store", stdin=b"".join(encode(r) + b"\n" for r in recs), timeout=300)


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """minify with 8 s for the reduction (pysource-minimize's own search takes minutes on 2 cores: the smallest
    found then is the repro), then its verification and stage runs (~5 forked runs)."""
    d = tmp_path_factory.mktemp("dynamo")
    r = _minify(d, "identity_guard.py", "call 1: eager [-2.0, -3.0], compiled [4.0, 9.0]", "--timeout", "8",
                "-o", str(d / "repro.py"))
    return r, (d / "repro.py").read_text() if (d / "repro.py").exists() else ""


def test_the_scripts_own_failing_check_is_reduced_and_its_stage_is_dynamo(reduced):
    r, text = reduced
    assert r.code == 1, r.stderr
    assert f"minify: identity_guard.py: {SIG}; reducing the script" in r.stderr
    (rep,) = r.kind("repro")
    assert (rep["failure"], rep["signature"], rep["reproduced"], rep.get("model")) == ("accuracy", SIG, 2, None)
    (b,) = r.kind("bisect")
    assert (b["backend"], b["found"], b["chain"], b["env"]) == ("eager", True, {"eager": True},
                                                               {"TORCH_BISECT_BACKEND": "eager"})
    assert b["verdict"] == ("Dynamo alone (the eager backend): it fails under TORCH_BISECT_BACKEND=eager and runs "
                            "through with torch.compile disabled")
    assert (b["off"]["setting"], b["off"]["fails"], b["on"]["setting"], b["on"]["fails"]) == \
        ("TORCHDYNAMO_DISABLE=1", False, "TORCH_BISECT_BACKEND=eager", True)
    assert "    TORCH_BISECT_BACKEND=eager python repro.py  # fails (exit 1)\n" in text
    assert "    TORCHDYNAMO_DISABLE=1 python repro.py  # passes (exit 0)\n" in text


def test_the_repro_fails_alone_runs_through_with_compile_disabled_and_keeps_the_users_check(reduced, tmp_path):
    _, text = reduced
    user = text.split("# ---- the user's script, reduced ----\n")[1]
    # how far 8 s cuts is the reducer's search on this machine (the corpus's 300 s cut it: tests/realbugs); the
    # user's own check is what it never cuts
    assert "assert torch.equal(e, c), f'call {i}: eager {e.tolist()}, compiled {c.tolist()}'" in user
    out = tmp_path / "repro.py"
    out.write_text(text)
    p = run_repro(out)
    assert p.returncode == 1 and p.stderr.rstrip().endswith(f"repro: reproduced: {SIG}"), p.stderr
    # `TORCHDYNAMO_DISABLE=1 python repro.py`, the variable set as the repro starts (torch.compile reads it at each
    # call): so the run forks from the warm server, which refuses another environment (15 s of imports here)
    head, _, user = text.partition("# ---- the user's script, reduced ----\n")
    out.write_text(head + "import os\nos.environ['TORCHDYNAMO_DISABLE'] = '1'\n" + user)
    p = run_repro(out)
    assert (p.returncode, p.stderr) == (0, ""), p.stderr
    # the user's own check is the failure: the same assert at another statement is another failure (125)
    out.write_text(head + user.replace("assert torch.equal(e, c), f'call", "assert torch.equal(c, e), f'call"))
    p = run_repro(out)
    assert p.returncode == 125 and re.search(r"repro: fails otherwise: AssertionError: .* at: assert torch\.equal\(c, e\)",
                                             p.stderr), p.stderr


def test_a_script_failing_the_same_way_with_compile_disabled_is_the_users_own_bug(tmp_path):
    # kdiff could not judge its graph (pytorch#176854's: "no floating output of the model requires grad"): the
    # script is what is left to judge, not "nothing to minify yet"
    r = _minify(tmp_path, "own_assert.py", "expected 9, got 8.0", "-o", str(tmp_path / "repro.py"),
                refused="--mode train: no floating output of the model requires grad")
    assert r.code == 2, r.stderr
    assert "minify: <stdin>:2: AssertionError: expected 9, got 8.0: the command failed, and the step before minify " \
           "stopped (--mode train: no floating output of the model requires grad), so no captured graph was judged: " \
           "the script itself is reduced" in r.stderr, r.stderr
    assert r.stderr.splitlines()[-1] == (
        "minify: error: <stdin>:2: AssertionError: expected 9, got 8.0 (the command failed and no graph was kept or "
        "shows it, so there is no graph to cut: own_assert.py fails the same way with torch.compile disabled "
        "(TORCHDYNAMO_DISABLE=1): AssertionError: expected <n>, got <n> at: assert compiled.item() == 9.0, "
        "f'expected 9, got {compiled.item()}' is the script's own failure, not the compiler's; no repro)")
    assert not (tmp_path / "repro.py").exists() and r.kind("repro") == []


def test_a_run_without_a_fork_server_gets_one_for_its_candidates_and_it_ends_with_the_reduction(monkeypatch):
    # a user's triage has no test run's server: each candidate was a fresh interpreter (5-25 s of imports on 2
    # busy cores), and pytorch#176854's 300 s reduction ran 8 candidates, 26 -> 22 lines (60 s forked: 11 lines)
    import os

    from pt2kit.minify.parent import script
    from pt2kit.runtime.parent.forkclient import ENV

    monkeypatch.delenv(ENV, raising=False)
    with script.own_server():
        path = script._SERVER[0]
        assert path is not None and os.path.exists(path)
    assert script._SERVER[0] is None and not os.path.exists(os.path.dirname(path))
