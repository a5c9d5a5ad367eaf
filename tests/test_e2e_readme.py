"""Every example command in the READMEs (the guide, each package's, where each tool's reference is, and docs/)
runs as written: no example names a flag, a file or a kernel that does not exist, and none ends in bad usage (2)
or a crash (3)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
READMES = [ROOT / "README.md", *sorted(ROOT.glob("packages/*/README.md")), ROOT / "schemas" / "README.md",
           *sorted(ROOT.glob("docs/*.md"))]
TOOLS = "fxcheck|kdiff|guardscan|aotiprint|minify|reportgen|pt2kit"


def examples() -> list[str]:
    """Lines of the READMEs' indented code blocks (a block starts after a blank line, so a wrapped list
    item's continuation line is prose) that start with a tool and hold no synopsis placeholder."""
    out, block, prev = [], False, ""
    for line in "\n\n".join(path.read_text() for path in READMES if path.is_file()).splitlines():
        block = line.startswith("    ") and (block or not prev.strip())
        prev = line
        m = re.match(rf"    (({TOOLS}) .*)", line)
        # `pt2kit triage` runs every tool on a training script: tests/test_e2e_triage.py runs the README's line
        # once and checks its folder, so it is not run twice
        if block and m and not re.search(r"MODEL\.py|\[--|\bDIR\b|\[FILE|STREAM|^    pt2kit triage ", line):
            out.append(re.sub(r"\s+#.*$", "", m.group(1)))
    return out


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def test_the_readme_has_examples():
    assert len(examples()) >= 6


@pytest.mark.parametrize("command", examples())
def test_readme_example_runs(tmp_path, command):
    if "--device cuda" in command and not _cuda():
        pytest.skip("needs CUDA")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    # each command of the line (`;` and pipes) must end in 0 or 1: clean or findings
    script = "set -o pipefail; " + "; ".join(f"{part.strip()}; s+=($?)" for part in command.split(";")) \
        + '; echo "${s[@]}" >&2'
    env = dict(os.environ, PT2KIT_STORE=str(tmp_path / "store"))
    p = subprocess.run(["bash", "-c", "s=(); " + script], cwd=tmp_path, capture_output=True, env=env, timeout=600)
    codes = [int(c) for c in p.stderr.decode().strip().splitlines()[-1].split()]
    assert codes and all(c in (0, 1) for c in codes), f"{command}: exit codes {codes}\n{p.stderr.decode()[-3000:]}"
    assert b"Traceback" not in p.stderr
