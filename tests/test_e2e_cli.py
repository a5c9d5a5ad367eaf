"""Every command as a new user first meets it: --help, --version, a usage error, completion on offer."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

TOOLS = {"fxcheck": "pt2kit.fxcheck", "kdiff": "pt2kit.kdiff", "guardscan": "pt2kit.guardscan",
         "aotiprint": "pt2kit.aotiprint", "minify": "pt2kit.minify", "reportgen": "pt2kit.reportgen",
         "pt2kit": "pt2kit.runtime", "pt2kit triage": "pt2kit.triage"}


@pytest.mark.parametrize("tool", list(TOOLS))
def test_help_version_and_one_line_usage_errors(tool):
    module = TOOLS[tool]
    run = lambda *a: subprocess.run([sys.executable, "-m", module, *a], capture_output=True, text=True, timeout=60)  # noqa: E731
    h = run("--help")
    assert h.returncode == 0 and "Exit codes: 0 clean; 1 findings" in h.stdout and "--install-completion" in h.stdout
    v = run("--version")
    assert v.returncode == 0 and v.stdout == f"{tool} {importlib.import_module(module).__version__}\n"
    bad = run("--no-such-flag")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == f"{tool}: error: No such option '--no-such-flag'.  (see {tool} --help)\n"
