"""fxcheck's capture and checks against torch.compile(backend="aot_eager") doing the same capture.

Both compile the same small model (examples/tinynet.py) from a reset Dynamo and run it once; the
anchor is measured in the same run. Two views: in-process (the library backend with every check of
the npu-bf16 profile and a store, against aot_eager), and the whole command (`fxcheck` with its
child process, against `python -c` doing the aot_eager compile). Goal (issue 3): <= 1.3x.
Run: `nox -s bench -- benchmarks/bench_fxcheck.py`.
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from pt2kit.fxcheck.checker import Checker
from pt2kit.fxcheck.profiles import load_profile
from pt2kit.schema import Store

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tinynet.py"
REPEAT = 7


def load():
    spec = importlib.util.spec_from_file_location("tinynet", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.model, mod.example_inputs


def once(backend_factory) -> float:
    model, inputs = load()
    torch._dynamo.reset()
    t = time.perf_counter()
    with torch.no_grad():
        torch.compile(model, backend=backend_factory())(*inputs)
    return time.perf_counter() - t


def command(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    profile = load_profile("npu-bf16")
    with tempfile.TemporaryDirectory() as d:
        store = Store(d)
        once(lambda: "aot_eager")  # warm both paths once
        once(lambda: Checker(profile, store=store, emit=lambda r: None))
        anchor, ours = [], []
        for _ in range(REPEAT):  # interleaved, so drift hits both alike
            anchor.append(once(lambda: "aot_eager"))
            ours.append(once(lambda: Checker(profile, store=store, emit=lambda r: None)))
        a, o = statistics.median(anchor), statistics.median(ours)
        print(f"in-process, median of {REPEAT}: aot_eager {a * 1000:.0f} ms, fxcheck backend (npu-bf16) "
              f"{o * 1000:.0f} ms: {o / a:.2f}x  goal <= 1.3x: {'met' if o / a <= 1.3 else 'MISSED'}")
        anchor_cmd = [sys.executable, "-c",
                      "import importlib.util,sys,torch; s=importlib.util.spec_from_file_location('m', sys.argv[1]); "
                      "m=importlib.util.module_from_spec(s); s.loader.exec_module(m); "
                      "torch.no_grad().__enter__(); torch.compile(m.model, backend='aot_eager')(*m.example_inputs)",
                      str(EXAMPLE)]
        ours_cmd = [sys.executable, "-m", "pt2kit.fxcheck", str(EXAMPLE), "--profile", "npu-bf16", "--store", d, "-q"]
        ca = statistics.median(command(anchor_cmd) for _ in range(3))
        co = statistics.median(command(ours_cmd) for _ in range(3))
        print(f"whole command, median of 3: python -c aot_eager {ca:.2f} s, fxcheck {co:.2f} s: {co / ca:.2f}x")


if __name__ == "__main__":
    main()
