"""pt2kit triage as a user meets it: bad input is one line and exit 2 with nothing written over, the script's
own stdout stays on stdout, its failure before any compile is its own (exit 2), a real SIGINT stops the run
and leaves what was done, and the exit code is the worst step's."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from pt2kit.testkit import module, popen, run
from pt2kit.triage import streams
from pt2kit.triage.drive import _handover, worst
from pt2kit.triage.narrate import Narrator
from pt2kit.triage.steps import Step

SLEEPER = str(Path(__file__).parent / "scripts" / "sleeper.py")
TRIAGE = module("pt2kit.triage")


def test_a_folder_that_holds_files_is_refused_before_anything_runs(tmp_path):
    out = tmp_path / "old"
    out.mkdir()
    (out / "report.html").write_text("mine")
    r = run([*TRIAGE, "--out", str(out), "--", sys.executable, SLEEPER], cwd=tmp_path)
    assert r.code == 2
    assert r.stderr.splitlines() == [f"triage: error: --out {out}: the folder holds files already; triage writes only "
                                     "into a new or empty folder (give another --out, or leave it out for a fresh "
                                     "triage-N)"]
    assert sorted(p.name for p in out.iterdir()) == ["report.html"] and (out / "report.html").read_text() == "mine"
    assert r.stdout == b""  # the script never ran


def test_no_command_and_a_missing_command_are_one_line_each(tmp_path):
    r = run(TRIAGE, cwd=tmp_path)
    assert r.code == 2
    assert r.stderr == ("triage: error: no command to run: give it after --, e.g. pt2kit triage -- python train.py "
                        "(or the records pt2kit capture wrote: --from FILE)\n")
    r = run([*TRIAGE, "--", "no-such-command-here"], cwd=tmp_path)
    assert (r.code, r.stderr) == (2, "triage: error: no-such-command-here: no such command\n")
    assert list(tmp_path.iterdir()) == []  # no folder made


def test_the_scripts_stdout_stays_on_stdout_and_its_own_failure_is_exit_2(tmp_path):
    r = run([*TRIAGE, "--", sys.executable, "-c", "print('mine'); raise SystemExit(4)"], cwd=tmp_path)
    assert r.stdout == b"mine\n"  # the user's, as capture --out leaves it
    assert r.code == 2, r.stderr
    assert "triage: capture: exit 4 (the script exited 4)" in r.stderr
    assert "triage: the script failed (exit 4) before torch.compile handed a backend any graph (its stderr above says why)" \
        in r.stderr
    out = tmp_path / "triage-1"
    assert sorted(p.name for p in out.iterdir() if p.name != "store") == \
        ["bug-report.md", "capture.ndjson", "report.html", "reportgen.ndjson"]
    report = (out / "bug-report.md").read_text()
    assert "(the script exited 4)" in report and "Not bisected" in report
    assert "pt2kit capture --store triage-1/store --out triage-1/capture.ndjson -- " in report


def test_a_second_run_takes_a_fresh_folder(tmp_path):
    (tmp_path / "triage-1").mkdir()
    r = run([*TRIAGE, "--", sys.executable, SLEEPER], cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert r.stdout == b"sleeper: out\n" and "sleeper: err" in r.stderr
    assert list((tmp_path / "triage-1").iterdir()) == []
    assert "triage: read triage-2/bug-report.md first; the page is triage-2/report.html (exit 0: clean)" in r.stderr


def test_ctrl_c_stops_the_run_and_leaves_what_was_done(tmp_path):
    started = tmp_path / "started"
    p = popen([*TRIAGE, "--out", str(tmp_path / "t"), "--", sys.executable, SLEEPER, str(started)], cwd=tmp_path,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not started.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started.exists(), p.communicate()[1].decode()
    p.send_signal(signal.SIGINT)  # to triage alone, as `kill -INT`: it hands it to the step running
    _, err = p.communicate(timeout=120)
    text = err.decode()
    assert p.returncode == 130, text
    assert "triage: stopped during capture: what was done stays in t (capture.ndjson); no further step ran" in text
    assert text.rstrip().endswith("triage: interrupted")
    assert sorted(x.name for x in (tmp_path / "t").iterdir() if x.name != "store") == ["capture.ndjson"]
    kinds = (tmp_path / "t" / "capture.ndjson").read_text()
    assert '"kind":"header"' in kinds and '"kind":"crash"' in kinds  # capture wrote how the script ended


def test_a_run_that_starts_its_own_fork_server_leaves_none_behind_even_on_ctrl_c(tmp_path):
    """Outside a test run no fork server is named: triage starts one for kdiff's and minify's workers, and
    stops it however the run ends (here a SIGINT during capture: the lines and exit code are those above)."""
    import os

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k != "PT2KIT_FORKSERVER"}, "TMPDIR": str(tmp)}
    started = tmp_path / "started"
    p = popen([*TRIAGE, "--out", str(tmp_path / "t"), "--", sys.executable, SLEEPER, str(started)], cwd=tmp_path,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 120
    while not started.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    served = list(tmp.glob("pt2kit-fork-*/socket"))
    assert len(served) == 1, p.communicate()[1].decode()  # the server triage started, beside the script
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err.decode()
    assert "triage: stopped during capture: what was done stays in t (capture.ndjson)" in err.decode()
    assert list(tmp.iterdir()) == []
    assert [pid for pid in _pids() if str(served[0]).encode() in _cmdline(pid)] == []


def _pids() -> list[str]:
    return [d.name for d in Path("/proc").iterdir() if d.name.isdigit()] if Path("/proc/self").exists() else []


def _cmdline(pid: str) -> bytes:
    try:
        return (Path("/proc") / pid / "cmdline").read_bytes()
    except OSError:  # ended meanwhile
        return b""


def _steps(*codes: int) -> list[Step]:
    names = ["capture", "guardscan", "kdiff", "minify", "reportgen"]
    return [Step(n, [n], code=c) for n, c in zip(names, codes, strict=False)]


def test_the_exit_code_is_the_worst_steps():
    assert worst(_steps(0, 0, 0), compiled=True) == 0
    assert worst(_steps(0, 1, 0, 1, 0), compiled=True) == 1  # a graph break, a repro
    assert worst(_steps(0, 0, 3, 1, 0), compiled=True) == 3  # a kdiff crash no repro reproduces outranks a repro
    assert worst(_steps(1, 0, 0), compiled=True) == 3  # the script died with graphs compiled; nothing explains it
    assert worst(_steps(1, 0), compiled=False) == 2  # it died before compiling: its own failure
    assert worst(_steps(1, 0, 1, 1, 0), compiled=True) == 1  # its death reproduced by minify
    assert worst(_steps(0, -9), compiled=True) == 3  # a tool killed by a signal
    # a bug found stays the answer where a later step refused its input (minify: a setting it will not apply)
    assert worst(_steps(0, 0, 1, 2, 0), compiled=True) == 1
    assert worst(_steps(1, 0, 2, 0), compiled=True) == 2  # kdiff refused: what it said is the answer, not a crash


def _crash_stream(path: Path, reproduced: bool) -> Path:
    """kdiff's child killed by SIGABRT in the compiled code of a graph (pytorch#181688's heap corruption, which
    the script's own capture could not pin on a graph), then minify's repro of that crash."""
    from pt2kit.schema import BlobRef, Crash, Header, Repro
    from pt2kit.schema.stream import encode

    label = "abort.py[0/0]"
    repro = BlobRef(path="blobs/aa/a.py", sha256="a" * 64, size=1, media_type="text/x-python")
    recs = [Header(v=1, run="k", tool="kdiff", tool_version="0", argv=["kdiff"], time="t", host="h", python="3",
                   store="s"),
            Crash(v=1, run="k", model=label, stage="compile and run test (inductor)", signal="SIGABRT",
                  exitcode=-6, message="child process killed by SIGABRT during compile and run test (inductor)"),
            Header(v=1, run="m", tool="minify", tool_version="0", argv=["minify"], time="t", host="h", python="3",
                   store="s"),
            Repro(v=1, run="m", model=label, path=repro, failure="crash", nodes_before=5, nodes_after=3, reproduces=reproduced, signature="SIGABRT")]
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    return path


def test_a_compiler_crash_kdiff_hit_and_minify_reproduced_is_the_bug_found(tmp_path):
    """triage exited 3 ("a crash") on pytorch#181688 although its repro failed alone on 2.11 and passed on 2.13:
    kdiff's exit 3 for the compiler's crash outranked minify's repro. A crash a repro reproduces is the finding;
    one no repro reproduces stays a crash."""
    found = streams.read(_crash_stream(tmp_path / "found.ndjson", True)).explained()
    assert found == {"kdiff"}
    assert worst(_steps(134, 0, 3, 1, 0), compiled=True, explained=found) == 1
    lost = streams.read(_crash_stream(tmp_path / "lost.ndjson", False)).explained()
    assert lost == set() and worst(_steps(134, 0, 3, 1, 0), compiled=True, explained=lost) == 3


def test_a_tool_runs_as_its_command_else_as_python_m_and_is_shown_so(monkeypatch, tmp_path):
    from pt2kit.triage.steps import command

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert command("kdiff") == (["python3", "-m", "pt2kit.kdiff"], [str(tmp_path / "python3"), "-m", "pt2kit.kdiff"])
    assert command("pt2kit capture")[0] == ["python3", "-m", "pt2kit.capture"]  # not the group's entry point
    (tmp_path / "pt2kit").write_text("#!/bin/sh\n")
    (tmp_path / "pt2kit").chmod(0o755)  # installed beside this Python: the command itself
    assert command("pt2kit capture") == (["pt2kit", "capture"], [str(tmp_path / "pt2kit"), "capture"])


def test_a_backend_of_the_scripts_own_code_is_handed_over_and_said(tmp_path):
    from pt2kit.triage.drive import _backend
    from pt2kit.triage.narrate import Narrator
    from pt2kit.triage.streams import Seen

    said: list[str] = []
    say = Narrator(said.append, tmp_path, tmp_path / "t")
    assert _backend(Seen(models=["t.py[0/0]"]), say) == [] and said == []  # a name torch registers: the stream's
    assert _backend(Seen(backend_code={"/w/t.py:my_backend"}), say) == ["--backend", "/w/t.py:my_backend"]
    assert said == ["the script compiled with its own backend /w/t.py:my_backend: triage hands it to kdiff and minify "
                    "as --backend /w/t.py:my_backend (a stream alone never makes a tool import code; you named the "
                    "script)"]
    assert _backend(Seen(backend_code={"/w/a.py:f", "/w/b.py:g"}), say) is None  # one --backend a run: left to the user
    assert said[-1].startswith("kdiff, minify: skipped: the script's graphs compiled with 2 backends of its own code")
    assert say.notes == said  # and bug-report.md lists them beside the commands


def test_a_backend_whose_script_runs_at_import_is_not_handed_over_and_the_run_says_so(tmp_path):
    """Issue 55, finding 4: a script without a __main__ guard whose backend is its own function ran whole in
    kdiff's and minify's workers (12 times in all). triage asks the loader's rule before it hands the flag
    over: one line, neither tool runs, exit 2 (the run is incomplete) unless a worse step says otherwise."""
    from pt2kit.triage.drive import _backend, worst
    from pt2kit.triage.narrate import Narrator
    from pt2kit.triage.streams import Seen

    script = tmp_path / "train.py"
    script.write_text("import torch\n\n\ndef my_backend(gm, example_inputs):\n    return gm.forward\n\n\n"
                      "def train():\n    for _ in range(3):\n        pass\n\n\ntrain()\n")
    said: list[str] = []
    say = Narrator(said.append, tmp_path, tmp_path / "t")
    assert _backend(Seen(backend_code={f"{script}:my_backend"}), say) is None
    assert said == ["kdiff, minify: skipped: train.py runs code at import (line 13: `train()`), so its backend "
                    "my_backend cannot be loaded from it without running the script again: put the backend in a file "
                    "of its own and pass --backend FILE.py:my_backend, or put the script's run under if __name__ == "
                    "\"__main__\":"]
    assert worst(_steps(0, 0, 0), compiled=True, refused=True) == 2
    assert worst(_steps(0, 1, 0), compiled=True, refused=True) == 1  # a graph break found stays the answer
    # guarded, it is handed over as before
    script.write_text(script.read_text().replace("train()\n", "if __name__ == \"__main__\":\n    train()\n"))
    assert _backend(Seen(backend_code={f"{script}:my_backend"}), say) == ["--backend", f"{script}:my_backend"]


def test_help_imports_no_torch():
    code = ("import sys\nfrom pt2kit.triage.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "import pt2kit.triage.drive, pt2kit.triage.bugreport\nassert 'torch' not in sys.modules, 'torch'\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Usage: pt2kit triage [OPTIONS] [-- COMMAND [ARGS...]]" in r.stdout


def test_a_pass_the_script_set_to_code_is_handed_over_as_config_and_said(tmp_path):
    # before, triage handed over a backend of code only: kdiff refused the stream's post_grad_custom_post_pass
    # (exit 2, its line naming the --config to give by hand) and minify never ran
    seen = streams.Seen(code_settings={"inductor.post_grad_custom_post_pass": {"/w/pg.py:corrupt"},
                                       "decomposition:aten.silu.default": {"/w/d.py:wrong_silu"}})
    said: list[str] = []
    flags = _handover(seen, Narrator(said.append, tmp_path, tmp_path))
    assert flags == ["--config", "post_grad_custom_post_pass=/w/pg.py:corrupt"]
    assert any("hands it to kdiff and minify as --config post_grad_custom_post_pass=/w/pg.py:corrupt" in x
               for x in said), said
    assert any("decomposition of aten.silu.default" in x and "cannot hand that over" in x for x in said), said


def test_the_scripts_own_failure_goes_to_minify_where_graphs_were_kept_too(tmp_path):
    # pytorch#196173: the script's one graph passes kdiff, its own assert fails (Dynamo folded an identity test
    # unguarded): minify reduces the script, where before "nothing to minify" left triage at exit 3
    from pt2kit.schema import Crash, Header, Model
    from pt2kit.schema.stream import encode

    recs = [Header(v=1, run="c", tool="capture", tool_version="0", argv=["capture"], time="t", host="h", python="3",
                   store="s"),
            Model(v=1, run="c", model="g.py[0/0]", file="m.py"),
            Crash(v=1, run="c", stage="run", exitcode=1, exception="AssertionError", message="call 1")]
    path = tmp_path / "capture.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    assert streams.read(path).failing == ["crash of the script"]


def test_from_starts_at_captures_records_runs_no_command_and_says_so(tmp_path):
    # records pt2kit capture wrote before (no graph: the sleeper compiles none): the steps after capture on them
    cap = run([*module("pt2kit.capture"), "--out", "cap.ndjson", "--", sys.executable, SLEEPER], cwd=tmp_path)
    assert cap.code == 0, cap.stderr
    r = run([*TRIAGE, "--from", "cap.ndjson", "--out", "t"], cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert r.stdout == b"" and "sleeper: err" not in r.stderr  # no command ran
    assert "triage: capture: skipped: the records of cap.ndjson (--from, copied to t/capture.ndjson), captured " \
        f"before for {sys.executable} {SLEEPER}; triage runs no command" in r.stderr
    out = tmp_path / "t"
    assert (out / "capture.ndjson").read_bytes() == (tmp_path / "cap.ndjson").read_bytes()
    report = (out / "bug-report.md").read_text()
    assert f"Running `{sys.executable} {SLEEPER}` under `torch.compile`, as `pt2kit capture` recorded it before " \
           "triage ran (its records: `t/capture.ndjson`; triage ran no command)." in report
    assert "pt2kit capture --store" not in report  # no capture step to rerun
    # the folder it wrote is never written again: a second run into it is refused, the first's files kept
    again = run([*TRIAGE, "--from", "cap.ndjson", "--out", "t"], cwd=tmp_path)
    assert again.code == 2 and again.stderr.startswith("triage: error: --out t: the folder holds files already")
    assert (out / "bug-report.md").read_text() == report


def test_from_refuses_a_command_too_a_missing_file_and_records_capture_did_not_write(tmp_path):
    (tmp_path / "kd.ndjson").write_text('{"v":1,"run":"r1","kind":"header","tool":"kdiff","tool_version":"2","argv":'
                                        '["kdiff"],"time":"t","host":"h","python":"3","store":"/s"}\n')
    (tmp_path / "junk.ndjson").write_text("not a record\n")
    (tmp_path / "dir").mkdir()
    cases = {("--from", "kd.ndjson", "--", "true"): "--from kd.ndjson and a command: give one (--from: records "
                                                     "captured before, which triage runs no command for)",
             ("--from", "nope.ndjson"): "--from nope.ndjson: no such file",
             ("--from", "dir"): "--from dir: is a folder, not a file (give the file pt2kit capture wrote)",
             ("--from", "kd.ndjson"): "--from kd.ndjson: not records pt2kit capture wrote (its first part is kdiff's); "
                                      "give capture's stream (pt2kit capture --out FILE, or a notebook's cap.write(FILE))"}
    for args, line in cases.items():
        r = run([*TRIAGE, *args], cwd=tmp_path)
        assert (r.code, r.stderr) == (2, f"triage: error: {line}\n"), args
    r = run([*TRIAGE, "--from", "junk.ndjson"], cwd=tmp_path)
    assert r.code == 2 and r.stderr.startswith("triage: error: --from junk.ndjson: ") and r.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "junk.ndjson", "kd.ndjson"]  # no folder made
