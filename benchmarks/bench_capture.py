"""pt2kit capture's overhead: the user's training script run plainly and under `pt2kit capture`, in one run.

The script is what a user runs (no model file): a 6-layer MLP with LayerNorm and GELU, AdamW, 20
steps of `torch.compile(model)` (Inductor) plus a final `torch.compile`d evaluation at another batch
size (a second graph). Each contestant runs it as a fresh process from the same Inductor cache, filled
once by an untimed first run (a user's second run of a script: Dynamo still traces every graph and the
capture still records each, while Inductor's C++ compiles, tens of seconds cold, would drown the
difference), interleaved, median of REPEAT:

* plain: `python train.py`;
* capture with `--values none` (the graphs and their shapes; the issue's goal: within 1.2x of plain);
* capture with `--values small` (the default: real inputs up to 64 MiB, here all of them).

The ratio is of wall times measured in this run, on this machine; the capture's side includes its own
start (pt2kit's import), the store writes and the records. Run: `python benchmarks/bench_capture.py`
(about 3 minutes).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEAT = 3
GOAL = 1.2

SCRIPT = """
import torch

torch.manual_seed(0)
layers = []
for _ in range(6):
    layers += [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = torch.compile(model)
for i in range(20):
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    loss = torch.nn.functional.cross_entropy(step(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    print("eval", step(torch.randn(8, 256)).argmax(-1).tolist())
print("loss", round(loss.item(), 4))
"""


def run(argv: list[str], work: Path) -> tuple[float, str]:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(work / "cache"), PT2KIT_STORE=str(work / "store"))
    t = time.perf_counter()
    p = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    took = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip().splitlines()[-1:]}")
    return took, p.stdout


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    (work / "train.py").write_text(SCRIPT)
    capture = [sys.executable, "-m", "pt2kit.capture"]
    contestants = {
        "plain": [sys.executable, "train.py"],
        "capture --values none": [*capture, "--values", "none", "--out", "none.ndjson", "--", sys.executable, "train.py"],
        "capture --values small": [*capture, "--out", "small.ndjson", "--", sys.executable, "train.py"],
    }
    run(contestants["plain"], work)  # fills the Inductor cache every contestant then starts from
    times: dict[str, list[float]] = {k: [] for k in contestants}
    outputs: dict[str, set[str]] = {k: set() for k in contestants}
    for _ in range(REPEAT):
        for name, argv in contestants.items():
            took, out = run(argv, work)
            times[name].append(took)
            outputs[name].add(out)
            print(f"  {name}: {took:.2f} s", flush=True)
    # the script's own output is the same under capture (its stdout untouched with --out)
    same = len(set().union(*outputs.values())) == 1
    graphs = sum(1 for line in (work / "none.ndjson").read_text().splitlines() if '"kind":"model"' in line)
    plain = statistics.median(times["plain"])
    print(f"script: 20 compiled AdamW steps + a compiled eval; {graphs} graphs captured; the script's stdout "
          f"{'identical' if same else 'DIFFERS'} under capture")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:24s} median of {REPEAT}: {med:6.2f} s ({med / plain:.2f}x plain)  runs: "
              + ", ".join(f"{t:.2f}" for t in ts))
    ratio = statistics.median(times["capture --values none"]) / plain
    print(f"goal: capture --values none within {GOAL}x of plain: {'met' if ratio <= GOAL else 'NOT met'} ({ratio:.2f}x)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
