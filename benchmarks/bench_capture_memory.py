"""pt2kit capture's memory: the peak RSS of the user's script run plainly and under `pt2kit capture`, in one run.

The script is what a user runs: a 512 MiB float32 input (SIZE_MIB) handed to a `torch.compile`d function
(the eager backend: the compile is not what is measured), then it writes its own peak RSS (``VmHWM`` of
``/proc/self/status``, read at its end: the script's process alone, not capture's parent) to a file.
Each contestant runs it as a fresh process:

* plain: `python big.py`;
* capture with `--values none` (every input seeded: only its range is read);
* capture with `--values small` (the default: 64 MiB per graph, so this input is seeded too);
* capture with `--values all` (for information: the input is saved; its bytes are written straight from
  the script's own tensor, no copy where it is one contiguous CPU storage).

The issue's goal: `none` and `small` within 1.1x of plain (the range of an input capture does not keep
costs a few MB of scratch, whatever its size). Run: `python benchmarks/bench_capture_memory.py` (about a
minute; needs ~3 GB of free memory and 1 GB of disk under the temp dir).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SIZE_MIB = 512
GOAL = 1.1

SCRIPT = f"""
import sys

import torch

x = torch.randn({SIZE_MIB} * 1024 * 1024 // 4)
step = torch.compile(lambda t: t.mul_(0.5).sum(), backend="eager")
print("sum", round(float(step(x)), 1))
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
open(sys.argv[1], "w").write(str(int(peak.split()[1]) * 1024))
"""


def run(argv: list[str], work: Path, peak: Path) -> int:
    env = dict(os.environ, PT2KIT_STORE=str(work / "store"))
    p = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip().splitlines()[-1:]}")
    return int(peak.read_text())


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-capture-memory-"))
    (work / "big.py").write_text(SCRIPT)
    peak = work / "peak"
    script = [sys.executable, "big.py", str(peak)]
    capture = [sys.executable, "-m", "pt2kit.capture"]
    contestants = {
        "plain": script,
        **{f"capture --values {v}": [*capture, "--values", v, "--out", f"{v}.ndjson", "--", *script]
           for v in ("none", "small", "all")},
    }
    try:
        peaks = {name: run(argv, work, peak) for name, argv in contestants.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    plain = peaks["plain"]
    print(f"script: a {SIZE_MIB} MiB float32 input to a torch.compile'd function (eager backend); peak RSS "
          "(VmHWM) of the script's own process")
    for name, rss in peaks.items():
        print(f"{name:24s} {rss / 1e6:8.0f} MB  ({rss / plain:.2f}x plain, {(rss - plain) / 1e6:+.0f} MB)")
    worst = max(peaks["capture --values none"], peaks["capture --values small"]) / plain
    print(f"goal: capture --values none and small within {GOAL}x of plain: "
          f"{'met' if worst <= GOAL else 'NOT met'} ({worst:.2f}x)")


if __name__ == "__main__":
    main()
