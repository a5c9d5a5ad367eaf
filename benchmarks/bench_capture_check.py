"""What `pt2kit capture --check` costs a training loop: the wall time of its steps run plainly, under
capture, and under capture with `--check nan` and `--check accuracy`, in one run.

The script is a small training step (a 3-layer MLP with BatchNorm, batch 64, Adam), compiled with
Inductor; it times STEPS steps after WARMUP (the compile is not what is measured) and writes the time to a
file (the fastest of ROUNDS rounds of any of PASSES processes, on one thread: another user's load on a shared machine slows some
rounds, never speeds one). Each contestant runs it as a fresh process:

* plain: `python loop.py`;
* capture: `pt2kit capture -- python loop.py` (the first call's values kept; nothing per call);
* `--check nan`: each call's outputs scanned for NaN/Inf (every input copied on the graph's first call,
  and before each call the inputs an earlier call wrote into: BatchNorm's running stats);
* `--check accuracy`: each call's inputs copied and the graph run eagerly on them, compared by kdiff's rule.

Run: `python benchmarks/bench_capture_check.py` (a few minutes on 2 cores: four Inductor compiles). The
README's numbers are its output.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

STEPS, WARMUP, ROUNDS, PASSES = 50, 5, 9, 2

SCRIPT = f"""
import sys
import time

import torch

torch.manual_seed(0)
torch.set_num_threads(1)  # one thread: a shared machine's other load moves a step's time less
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.BatchNorm1d(512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
step = torch.compile(model)
x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))


def train():
    loss = torch.nn.functional.cross_entropy(step(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


for _ in range({WARMUP}):
    train()
times = []
for _ in range({ROUNDS}):
    t0 = time.perf_counter()
    for _ in range({STEPS}):
        loss = train()
    times.append(time.perf_counter() - t0)
open(sys.argv[1], "w").write(" ".join(map(str, times)))
print("loss", round(float(loss), 4))
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "loop.py").write_text(SCRIPT)
        capture = [sys.executable, "-m", "pt2kit.capture", "--store", str(d / "store"), "--out", str(d / "out.ndjson")]
        runs = {"plain": [], "capture": [*capture, "--"], "--check nan": [*capture, "--check", "nan", "--"],
                "--check accuracy": [*capture, "--check", "accuracy", "--"]}
        results: dict[str, float] = {}
        for _ in range(PASSES):  # the contestants in turn, PASSES times: a burst of load hits each alike
            for name, prefix in runs.items():
                out = d / "t.txt"
                subprocess.run([*prefix, sys.executable, "loop.py", str(out)], cwd=d, check=True, capture_output=True)
                best = min(float(t) for t in out.read_text().split()) / STEPS * 1e3
                results[name] = min(results.get(name, best), best)
        base = results["plain"]
        print(f"{STEPS} steps x {ROUNDS} rounds, the fastest round's ms per step (Inductor, CPU, torch {_torch()}):")
        for name, ms in results.items():
            print(f"  {name:18s} {ms:7.3f} ms  {ms / base:5.2f}x")


def _torch() -> str:
    import torch

    return torch.__version__


if __name__ == "__main__":
    main()
