"""The stream's own speed: records/s through a pass-through tool against plain msgspec decoding of
the same file, measured in one run; and `--help` start-up time of every installed pt2kit command.

Goal (issue 2): the pass-through rate is at least 0.5 M small records/s and within 2x of raw
msgspec decoding. Goal (issue 14): one 50 MB line passes through in at most 3x the time of the same
50 MB as small lines (reading is linear in the line's length; it took 23 s when it was quadratic). Run: `nox -s bench -- benchmarks/bench_stream.py`.
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

import msgspec

from pt2kit.schema import SCHEMA_MAJOR, AnyRecord, Violation, encode

N = 500_000


def make_stream(path: Path, n: int) -> int:
    with open(path, "wb") as f:
        for i in range(n):
            rec = Violation(v=SCHEMA_MAJOR, run="20261121T000000Z-abcdef012345", constraint="align",
                            message=f"dim 0 of size {i % 97} is not a multiple of 16", phase="forward",
                            node=f"addmm_{i % 13}", op="aten.addmm.default", dtype="float32", shape=[i % 97, 64],
                            source="model.py:12", module="layers.0.fc")
            f.write(encode(rec) + b"\n")
    return path.stat().st_size


def raw_msgspec(path: Path) -> float:
    dec = msgspec.json.Decoder(AnyRecord)
    t = time.perf_counter()
    with open(path, "rb") as f:
        for line in f:
            dec.decode(line)
    return time.perf_counter() - t


def through_tool(path: Path, *args: str) -> float:
    exe = shutil.which("pt2kit")
    cmd = [exe] if exe else [sys.executable, "-m", "pt2kit.runtime"]
    with open(path, "rb") as fin, open(os.devnull, "wb") as fout:
        t = time.perf_counter()
        subprocess.run([*cmd, "cat", *args], stdin=fin, stdout=fout, check=True)
        return time.perf_counter() - t


def long_line(d: Path, mb: int = 50) -> tuple[float, float]:
    """(seconds for one `mb` MB line, seconds for the same bytes as ~1 KB lines) through `pt2kit cat`."""
    one, many = d / "one.ndjson", d / "many.ndjson"
    pad = "x" * (mb << 20)
    one.write_bytes(b'{"kind":"error","v":1,"run":"r","message":"' + pad.encode() + b'","exit_code":2}\n')
    line = b'{"kind":"error","v":1,"run":"r","message":"' + b"x" * 1000 + b'","exit_code":2}\n'
    many.write_bytes(line * ((mb << 20) // len(line)))
    return min(through_tool(one) for _ in range(3)), min(through_tool(many) for _ in range(3))


def help_time(cmd: str, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([cmd, "--help"], stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "stream.ndjson"
        size = make_stream(path, N)
        print(f"stream: {N} violation records, {size / N:.0f} bytes each")
        raw = min(raw_msgspec(path) for _ in range(5))
        env = min(through_tool(path, "--envelope") for _ in range(5))
        full = min(through_tool(path, "--validate") for _ in range(5))
        one, many = long_line(Path(d))
    print(f"{'what':44} {'seconds':>8} {'records/s':>12} {'vs raw':>7}")
    for name, t in [("raw msgspec decode (anchor, in-process)", raw),
                    ("pt2kit cat --envelope (pass-through tool)", env),
                    ("pt2kit cat --validate (every record typed)", full)]:
        print(f"{name:44} {t:8.3f} {N / t:12,.0f} {t / raw:6.2f}x")
    ok = N / env >= 500_000 and env / raw <= 2.0
    print(f"goal >=0.5 M rec/s and <=2x raw (pass-through): {'met' if ok else 'MISSED'}")
    print(f"one 50 MB line: {one:.2f} s; the same bytes in 1 KB lines (anchor): {many:.2f} s; "
          f"{one / many:.2f}x; goal <=3x: {'met' if one / many <= 3 else 'MISSED'}")
    tools = [c for c in ["pt2kit", "fxcheck", "kdiff", "guardscan", "aotiprint", "minify", "benchrun", "reportgen"]
             if shutil.which(c)]
    for c in tools:
        print(f"{c} --help: {help_time(c) * 1000:.0f} ms (median of 5)")


if __name__ == "__main__":
    main()
