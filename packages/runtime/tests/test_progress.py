"""Progress on stderr: a live rich line on a terminal, plain stage lines elsewhere, nothing quiet."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from pt2kit.runtime.parent.progress import Progress

HERE = Path(__file__).parent


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_per_stage_and_a_last_line():
    out = io.StringIO()
    with Progress("kdiff", quiet=False, stream=out).task("m.py") as t:
        t.stage("load")
        t.stage("compile and run test (inductor)")
    lines = out.getvalue().splitlines()
    assert [ln.split("] ", 1)[1] for ln in lines[:2]] == ["load", "compile and run test (inductor)"]  # load said late
    assert lines[0].startswith("kdiff: m.py: [0.0s]") and lines[2].startswith("kdiff: m.py: done in ")


def test_a_failure_says_stopped_after():
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt), Progress("kdiff", quiet=False, stream=out).task("m.py") as t:
        t.stage("compile")
        raise KeyboardInterrupt
    assert out.getvalue().splitlines()[-1].startswith("kdiff: m.py: stopped after ")


def test_quiet_says_nothing():
    out = io.StringIO()
    with Progress("kdiff", quiet=True, stream=out).task("m.py") as t:
        t.stage("load")
    assert out.getvalue() == ""


def test_terminal_gets_a_live_line_with_stage_and_elapsed(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    out = Terminal()
    with Progress("kdiff", quiet=False, stream=out).task("m.py") as t:
        t.stage("localize: graph 0, bisecting 40 nodes, step 3 of ~7")
        import time

        time.sleep(0.3)  # let the live display draw once
    text = out.getvalue()
    assert "kdiff: m.py: localize: graph 0, bisecting 40 nodes, step 3 of ~7" in text
    assert "0:00:00" in text  # the elapsed column
    assert "kdiff: m.py: done in " in text.rstrip().splitlines()[-1]  # after rich clears its line


def test_stage_text_from_a_model_cannot_drive_the_terminal():
    out = io.StringIO()
    with Progress("kdiff", quiet=False, stream=out).task("m\x1b[2J.py") as t:
        t.stage("evil\x1b]0;title\x07")
    assert "\x1b" not in out.getvalue() and "\\x1b]0;title\\x07" in out.getvalue()


def test_a_tool_shows_its_workers_stages(tmp_path):
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, str(HERE / "sigtool.py"), "emits_and_prints", str(tmp_path),
                        str(tmp_path / "pid")], capture_output=True, env=env, timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 0, err
    assert "sigtool: m.py: [" in err and "] capture" in err and "sigtool: m.py: done in " in err


def test_bad_input_while_loading_leaves_only_its_error_line():
    from pt2kit.runtime.common.errors import UsageError

    out = io.StringIO()
    with pytest.raises(UsageError), Progress("kdiff", quiet=False, stream=out).task("m.py") as t:
        t.stage("load")
        raise UsageError("m.py: defines no `model`")
    assert out.getvalue() == ""


def test_a_long_stage_says_it_is_still_running_and_for_how_long():
    # the interval is injected (30 s in use): the test waits for the line, it times nothing
    import re
    import time

    out = io.StringIO()
    with Progress("kdiff", quiet=False, stream=out, heartbeat=0.02).task("m.py") as t:
        t.stage("load")
        t.stage("compile and run test (inductor)")
        deadline = time.monotonic() + 60
        while "still" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    lines = out.getvalue().splitlines()
    still = [ln for ln in lines if "still" in ln]
    assert still and re.fullmatch(r"kdiff: m\.py: \[\d+\.\ds\] still compile and run test \(inductor\), \d+s so far",
                                  still[0]), lines
    assert lines[-1].startswith("kdiff: m.py: done in ") and lines[1].endswith("] compile and run test (inductor)")


def test_no_heartbeat_on_a_quick_stage():
    out = io.StringIO()
    with Progress("kdiff", quiet=False, stream=out).task("m.py") as t:
        t.stage("load")
        t.stage("compare")
    assert "still" not in out.getvalue()
