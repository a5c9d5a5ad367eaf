"""The interpreter the versions are read in: the command's python, else the one its first line names as the
kernel reads it (the program, or env's program), else triage's own. Real files; no probe is run."""

from __future__ import annotations

import sys

from pt2kit.triage.environment import interpreter


def _script(tmp_path, name: str, first: str) -> str:
    path = tmp_path / name
    path.write_text(f"{first}\n# python3 train.py, says a comment\necho hi\n")
    path.chmod(0o755)
    return str(path)


def test_a_shell_script_mentioning_python_is_no_python(tmp_path):
    # its first line mentions python, but bash runs it: the probe (Python code) was run by bash, and the
    # report said "/bin/bash printed no versions"
    for first in ("#!/bin/bash -e # python", "#!/usr/bin/env bash # python3", "#!/bin/sh"):
        script = _script(tmp_path, "run.sh", first)
        assert interpreter([script]) == (sys.executable, f"triage's own: {script} is no python"), first


def test_a_python_script_names_its_interpreter_in_its_first_line(tmp_path):
    script = _script(tmp_path, "train.py", f"#!{sys.executable} -u")
    assert interpreter([script]) == (sys.executable, f"the interpreter {script}'s first line names")
    script = _script(tmp_path, "t2.py", "#!/usr/bin/env -S python3 -E")
    exe, note = interpreter([script])
    assert exe.endswith("python3") and note == f"the interpreter {script}'s first line names"
    assert interpreter([sys.executable, "t.py"]) == (sys.executable, None)
