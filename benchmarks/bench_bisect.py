"""Which stage of the compiler breaks a script: pt2kit's bisection (inside minify, on the 1-op repro) against
PyTorch's own `python -m torch._inductor.compiler_bisector run python SCRIPT`, on the planted scripts of
tests/bisect/ whose culprit is known, in one run:

- PyTorch's: the bisector's `run` mode, which reruns the whole script for every step (the script reads
  TORCH_COMPILE_BACKEND, as the bisector documents, and exits 0 when compiled matches eager); its answer
  is the `Bisection complete: BisectionResult(backend=..., subsystem=..., bisect_number=..., debug_info=...)`
  line it prints;
- ours: `pt2kit capture -- python SCRIPT | kdiff | minify -o repro.py`, piped (kdiff and minify given the flag that
  hands over code the script installed: `--config post_grad_custom_post_pass=SCRIPT:corrupt`, a decomposition
  through `--backend SCRIPT:inductor_with_wrong_silu`); its answer is minify's `bisect` record (backend,
  subsystem, application, what, config, found).

A case agrees where both name the same backend and the same subsystem (PyTorch's config changes, such as
`inductor_fallback_random`, against our record's `config`); the healthy script where neither names one.
Each side of each case starts from an Inductor cache of its own (the bisector keeps its state there too).
Prints one row a case: both answers, both wall times and their ratio (PyTorch's over ours; issue 47's goal:
the same culprit on every case, at least 5x faster). What is timed is what a user waits for before holding
the answer: ours, the whole pipeline; PyTorch's, the bisector's run.

    python benchmarks/bench_bisect.py [NAME...] [--ours-only|--torch-only] [--extra triton_relu] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "bisect"
PY = sys.executable


@dataclass(frozen=True)
class Case:
    name: str
    backend: str | None  # the first failing backend PyTorch's bisector names; None: no issue
    subsystem: str | None = None  # its subsystem (torch's name), None where it names none
    flags: tuple[str, ...] = field(default=())  # what hands kdiff and minify the code the script installed


def _script(name: str) -> str:
    return str(SCRIPTS / f"{name}.py")


CASES = [
    Case("relu_bug", "inductor", "lowerings"),
    Case("wrong_decomp", "aot_eager_decomp_partition", "decomposition",
         ("--backend", f"{_script('wrong_decomp')}:inductor_with_wrong_silu")),
    Case("post_grad_pass", "inductor", "post_grad_passes",
         ("--config", f"post_grad_custom_post_pass={_script('post_grad_pass')}:corrupt")),
    Case("joint_pass", "inductor", "joint_graph_passes",
         ("--config", f"joint_custom_post_pass={_script('joint_pass')}:corrupt")),
    # on the CPU Inductor's random decompositions already differ under aot_eager_decomp_partition (the
    # script's docstring); on a GPU PyTorch's test_rng names inductor / inductor_fallback_random
    Case("fallback_random", "aot_eager_decomp_partition", "decomposition"),
    Case("aot_eager_fail", "aot_eager"),
    Case("healthy", None),
]
EXTRA = {"triton_relu": Case("triton_relu", "inductor", "lowerings")}  # needs CUDA

_RESULT = re.compile(r"Bisection complete: BisectionResult\((.*)\)\s*$", re.M)


def run(cmd: list[str], cwd: Path, env: dict[str, str], stdin: Path | None = None, stdout: Path | None = None,
        timeout: float = 1800) -> tuple[subprocess.CompletedProcess | None, float]:
    """One command, in a session of its own so that a timeout stops the scripts it started too; None where
    it ran past ``timeout``."""
    t = time.perf_counter()
    with open(stdin or os.devnull, "rb") as i, open(stdout or os.devnull, "wb") as o:
        # the bisector sets TORCH_COMPILE_BACKEND itself; one left in this shell would pick ours
        base = {k: v for k, v in os.environ.items() if k != "TORCH_COMPILE_BACKEND"}
        p = subprocess.Popen(cmd, cwd=cwd, env={**base, **env}, stdin=i, stdout=o if stdout else subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return None, time.perf_counter() - t
    return subprocess.CompletedProcess(cmd, p.returncode, out, err), time.perf_counter() - t


def pytorch(case: Case, work: Path, timeout: float) -> dict[str, Any]:
    """The bisector's run mode on the script; its BisectionResult, parsed. Stopped past ``timeout``: then its
    time is a lower bound (a machine lent for 10 minutes a call cannot wait for it)."""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(work / "torch-cache")}
    p, wall = run([PY, "-m", "torch._inductor.compiler_bisector", "run", PY, _script(case.name)], work, env,
                  timeout=timeout)
    if p is None:
        return {"backend": None, "subsystem": None, "complete": False, "timed_out": True, "wall_s": round(wall, 1)}
    out = p.stdout.decode(errors="replace")
    (work / "torch.txt").write_text(out + p.stderr.decode(errors="replace")[-4000:])
    m = _RESULT.search(out)
    fields = dict(re.findall(r"(\w+)=('(?:[^'\\]|\\.)*'|None|-?\d+)", m.group(1))) if m else {}
    value = {k: (None if v == "None" else v.strip("'")) for k, v in fields.items()}
    return {"backend": value.get("backend"), "subsystem": value.get("subsystem"),
            "number": value.get("bisect_number"), "what": value.get("debug_info"),
            "complete": "Bisection complete" in out, "rc": p.returncode, "wall_s": round(wall, 1)}


def ours(case: Case, work: Path) -> dict[str, Any]:
    """capture | kdiff | minify, piped as the README runs them (each tool starts at once and warms its
    workers while the step before still runs); minify's bisect record."""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(work / "ours-cache"), "PT2KIT_STORE": str(work / "store")}
    flags = " ".join(shlex.quote(f) for f in case.flags)
    cmd = (f"{shlex.quote(PY)} -m pt2kit.capture -- {shlex.quote(PY)} {shlex.quote(_script(case.name))} 2>capture.err"
           f" | {shlex.quote(PY)} -m pt2kit.kdiff {flags} 2>kdiff.err"
           f" | {shlex.quote(PY)} -m pt2kit.minify {flags} -o repro.py > minify.ndjson 2>minify.err;"
           " echo ${PIPESTATUS[@]} > rcs")
    p, wall = run(["bash", "-c", cmd], work, env)
    assert p is not None  # no timeout asked
    codes = [int(c) for c in (work / "rcs").read_text().split()]
    records = [json.loads(line) for line in (work / "minify.ndjson").read_text().splitlines() if line.startswith("{")]
    bisect = next((r for r in records if r.get("kind") == "bisect"), None) or {}
    return {"backend": bisect.get("backend"), "subsystem": bisect.get("subsystem"),
            "number": bisect.get("application"), "what": bisect.get("what"), "config": bisect.get("config"),
            "found": bisect.get("found"), "bisected": bool(bisect), "rc": codes, "wall_s": round(wall, 1)}


def _same_subsystem(torch_side: dict[str, Any], our_side: dict[str, Any]) -> bool:
    theirs, config = torch_side.get("subsystem"), our_side.get("config") or ""
    if theirs and config:  # a config change: inductor_fallback_random against inductor.fallback_random=True
        return theirs.split("_", 1)[-1] in config.replace(".", "_")
    return theirs == our_side.get("subsystem")


def agree(case: Case, torch_side: dict[str, Any], our_side: dict[str, Any]) -> bool:
    if case.backend is None:
        return torch_side.get("backend") is None and not our_side.get("found")
    return torch_side.get("backend") == our_side.get("backend") and _same_subsystem(torch_side, our_side)


def _answer(side: dict[str, Any]) -> str:
    if not side:
        return "-"
    if side.get("timed_out"):
        return f"stopped past {side['wall_s']} s, no answer yet"
    parts = [side.get("backend") or "none", side.get("subsystem") or side.get("config") or "",
             "" if side.get("number") is None else f"#{side['number']}", (side.get("what") or "")[:40]]
    return " ".join(p for p in parts if p)


def _ratio(row: dict[str, Any]) -> str:
    return f">= {row['ratio_at_least']}" if "ratio_at_least" in row else str(row.get("ratio", "-"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--ours-only", action="store_true")
    ap.add_argument("--torch-only", action="store_true")
    ap.add_argument("--extra", action="append", default=[], choices=sorted(EXTRA), help="a GPU case, added")
    ap.add_argument("--json")
    ap.add_argument("--torch-timeout", type=float, default=1800,
                    help="stop PyTorch's bisector past this many seconds (its time is then a lower bound)")
    a = ap.parse_args()
    cases = [c for c in CASES if not a.names or c.name in a.names] + [EXTRA[n] for n in a.extra]
    rows = []
    for case in cases:
        with tempfile.TemporaryDirectory(prefix=f"bench-bisect-{case.name}-") as tmp:
            work = Path(tmp)
            # ours first, said at once: PyTorch's side may be stopped at --torch-timeout
            mine = {} if a.torch_only else ours(case, work)
            if mine:
                print(f"{case.name}: ours {_answer(mine)} in {mine['wall_s']} s", file=sys.stderr, flush=True)
            theirs = {} if a.ours_only else pytorch(case, work, a.torch_timeout)
        row = {"case": case.name, "expected": [case.backend, case.subsystem], "pytorch": theirs, "ours": mine}
        if theirs.get("timed_out") and mine:  # no answer to agree with; the ratio is at least this
            row["ratio_at_least"] = round(theirs["wall_s"] / mine["wall_s"], 2)
        elif theirs and mine:
            row["agree"] = agree(case, theirs, mine)
            row["ratio"] = round(theirs["wall_s"] / mine["wall_s"], 2) if mine["wall_s"] else None
        row["pytorch_as_expected"] = bool(theirs) and theirs.get("backend") == case.backend and (
            case.subsystem is None or theirs.get("subsystem") == case.subsystem)
        rows.append(row)
        print(f"{case.name:16} pytorch: {_answer(theirs):60} {theirs.get('wall_s', '-')!s:>7} s | ours: "
              f"{_answer(mine):60} {mine.get('wall_s', '-')!s:>7} s | agree {row.get('agree', '-')} "
              f"ratio {_ratio(row)}", flush=True)
    both = [r for r in rows if "agree" in r]
    if both:
        ratios = sorted(r["ratio"] for r in both if r["ratio"])
        print(f"same culprit on {sum(r['agree'] for r in both)} of {len(both)}; PyTorch's time over ours: "
              f"min {ratios[0] if ratios else '-'}, median {ratios[len(ratios) // 2] if ratios else '-'} "
              "(goal: every case agrees, >= 5x)")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
