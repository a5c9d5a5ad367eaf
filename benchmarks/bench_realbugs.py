"""The real-bug corpus (tests/realbugs) through `pt2kit triage` and through PyTorch's own minifier, on the same
torch (the buggy one, 2.11.0: run this file with its interpreter), side by side: a repro or not, does it fail
alone here and pass on the fixed torch, the ops in it, whether it names the fix's op or stage, wall time.

PyTorch's side is what its docs tell a user to do: the script under TORCHDYNAMO_REPRO_AFTER=aot,
TORCHDYNAMO_REPRO_LEVEL=4 (after_aot writes minifier_launcher.py when the compiled graph fails, an accuracy
failure included), then `python minifier_launcher.py minify` (a subprocess per query), whose repro.py is the
answer. A run that writes no launcher (a failure before AOT, a crash that kills the process) gives none.

    python benchmarks/bench_realbugs.py [--py213 PYTHON] [--reuse DIR] [--only NAME ...] [--timeout S]

--reuse DIR takes our side from a `tests/realbugs/run.py --out DIR` run (same torch) instead of triaging again.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("realbugs_run", ROOT / "tests" / "realbugs" / "run.py")
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)


def pytorch_side(bug: Path, py213: str | None, timeout: float, keep: Path | None = None) -> dict[str, object]:
    """after_aot's launcher, then its minify, then the repro.py it wrote, run alone on both torches (and copied
    to KEEP/NAME.pytorch-repro.py, to run elsewhere)."""
    fields = run.header(bug)
    with tempfile.TemporaryDirectory(prefix="realbugs-pt-") as d:
        work = Path(d)
        env = {**os.environ, "TORCHDYNAMO_REPRO_AFTER": "aot", "TORCHDYNAMO_REPRO_LEVEL": "4",
               "TORCH_COMPILE_DEBUG_DIR": str(work), "TORCHINDUCTOR_CACHE_DIR": str(work / "cache")}
        t = time.perf_counter()
        rc, _, said = run._run([sys.executable, str(bug)], work, timeout, env=env)
        tail = run._tail(said)
        row: dict[str, object] = {"script_exit": rc}
        launchers = sorted(work.rglob("minifier_launcher.py"), key=lambda p: p.stat().st_mtime)
        if not launchers:
            row.update(launcher=False, repro=False, why=tail.splitlines()[-1] if tail else "",
                       wall_s=round(time.perf_counter() - t, 1))
            return row
        before = set(work.rglob("repro.py"))
        rc, _, said = run._run([sys.executable, str(launchers[-1]), "minify"], launchers[-1].parent, timeout * 2,
                               env=env)
        tail = run._tail(said)
        row.update(launcher=True, minify_exit=rc, wall_s=round(time.perf_counter() - t, 1))
        written = sorted(set(work.rglob("repro.py")) - before, key=lambda p: p.stat().st_mtime)
        row["repro"] = bool(written)
        if not written:
            row["why"] = tail.splitlines()[-1] if tail else ""
            return row
        repro = written[-1]
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(repro, keep / f"{bug.stem}.pytorch-repro.py")
        row["ops"] = run.repro_ops(repro)
        row["culprit"] = "op" if run._short(fields.get("op", "")).lower() in repro.read_text().lower() else "no"
        row["repro_211"] = run._run([sys.executable, str(repro)], repro.parent, timeout)[0]
        if py213:
            row["repro_213"] = run._run([py213, str(repro)], repro.parent, timeout)[0]
        return row


def ours(bug: Path, out: Path, args: argparse.Namespace) -> dict[str, object]:
    if args.reuse:
        saved = args.reuse / f"{bug.stem}.json"
        return json.loads(saved.read_text()) if saved.is_file() else {"repro": False, "why": "not in --reuse"}
    return run.one(bug, out, argparse.Namespace(timeout=args.timeout, triage_timeout=None, no_triage=False,
                                                py213=args.py213))


def _cells(r: dict[str, object]) -> list[str]:
    ops = r.get("ops") or []
    return ["yes" if r.get("repro") else "no", run._yn(r.get("repro_211"), 1), run._yn(r.get("repro_213"), 0),
            str(len(ops)) if r.get("repro") else "-", str(r.get("culprit", "-")), str(r.get("wall_s"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--py213", default=os.environ.get("PT2KIT_TORCH213_PYTHON"),
                    help="an interpreter with the fixed torch [env PT2KIT_TORCH213_PYTHON]")
    ap.add_argument("--reuse", type=Path, help="our side from a tests/realbugs/run.py --out DIR")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--keep", type=Path, help="copy each repro PyTorch's minifier wrote here")
    args = ap.parse_args(argv)
    head = ["bug", "class"] + [f"{who} {c}" for who in ("pt2kit", "pytorch")
                               for c in ("repro", "fails 2.11", "passes 2.13", "ops", "culprit", "wall s")]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    tally = {"pt2kit": 0, "pytorch": 0}
    with tempfile.TemporaryDirectory(prefix="realbugs-ours-") as d:
        for bug in run.bugs(args.only):
            a, b = ours(bug, Path(d), args), pytorch_side(bug, args.py213, args.timeout, args.keep)
            tally["pt2kit"] += a.get("repro_211") == 1 and a.get("repro_213") == 0
            tally["pytorch"] += b.get("repro_211") == 1 and b.get("repro_213") == 0
            print("| " + " | ".join([bug.stem, run.header(bug).get("class", ""), *_cells(a), *_cells(b)]) + " |",
                  flush=True)
            if not b.get("repro"):
                print(f"<!-- {bug.stem}: pytorch: {'no launcher' if not b.get('launcher') else 'no repro'}: "
                      f"{b.get('why', '')} -->", flush=True)
    print(f"\nrepro that fails alone on the buggy torch and passes on the fixed one: pt2kit {tally['pt2kit']}, "
          f"PyTorch's minifier {tally['pytorch']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
