"""Run the real-bug corpus through `pt2kit triage` and check what a maintainer would: did triage say there is
a bug (exit 1), did it write a repro.py, does that repro fail alone on the buggy torch (exit 1) and pass on the
fixed one (exit 0), and do the title and the bisection name the op or stage the fix touched (each bug's header:
``op:`` and ``stage:``).

    python tests/realbugs/run.py --out DIR [--py213 PYTHON] [--jobs N] [--timeout S] [--only NAME ...]

The interpreter running this file is the buggy one (torch 2.11.0): triage, the bug scripts and the first repro
run use it (``python`` on PATH is its own). ``--py213`` (or PT2KIT_TORCH213_PYTHON) names an interpreter with
the fixed torch (2.13.0) for the second repro run; without one that column says ``-``. ``--no-triage`` reuses the
folders a run left in DIR (say, triage run on another machine) and only checks them. Per bug, DIR/NAME/ is
triage's folder and DIR/NAME.json this script's row. Prints one table; exits 0 only if every bug passes every
check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIELDS = ("issue", "fix", "class", "issue57", "stage", "op", "file", "changed")
COLUMNS = ("bug", "class", "i57", "triage", "repro", "fails 2.11", "passes 2.13", "ops", "culprit", "wall s")


def bugs(only: list[str] | None = None) -> list[Path]:
    """The corpus: every bug script here (run.py, tests and helpers excluded), or those named."""
    found = sorted(p for p in HERE.glob("*.py") if p.name != "run.py" and not p.name.startswith(("_", "test_")))
    return [p for p in found if not only or p.stem in only]


def header(path: Path) -> dict[str, str]:
    """A bug's header fields (``key: value`` lines of its docstring) plus its ``title`` (the first line)."""
    m = re.match(r'\s*"""(.*?)"""', path.read_text(), re.S)
    if not m:
        return {}
    lines = m.group(1).strip().splitlines()
    fields = {"title": lines[0].strip()} if lines else {}
    for line in lines[1:]:
        k, sep, v = line.partition(":")
        if sep and k.strip() in FIELDS:
            fields[k.strip()] = v.strip()
    return fields


def _run(cmd: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> tuple[int, float, str]:
    """(exit code, wall seconds, its output: stdout and stderr); past ``timeout`` its whole process group is
    killed and it reads as 124 (triage's workers would otherwise hold the pipes open), a signal as 128+N."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc, out = 124, f"{out}\ntimed out after {timeout:.0f}s"
    if rc < 0:
        rc = 128 - rc
    return rc, round(time.perf_counter() - t, 1), out or ""


def _tail(out: str, n: int = 6) -> str:
    return "\n".join(out.splitlines()[-n:])


def _env_with_python_first() -> dict[str, str]:
    """`python` in the triaged command is this interpreter (a venv's, whatever PATH the caller had)."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def _fresh_cache(env: dict[str, str], out: Path, name: str) -> dict[str, str]:
    """``env`` with Inductor's caches in a new folder of this run's (OUT/.caches/NAME), as on a maintainer's clean
    machine, unless the caller's environment names one: an entry an earlier run left in a shared cache can make a
    script pass (or a repro fail) for the cache alone (default_dtype_guard did both on torch 2.11)."""
    if "TORCHINDUCTOR_CACHE_DIR" in os.environ:
        return env
    where = out / ".caches" / name
    shutil.rmtree(where, ignore_errors=True)
    return {**env, "TORCHINDUCTOR_CACHE_DIR": str(where)}


def triage(bug: Path, out: Path, timeout: float, cap: float) -> dict[str, object]:
    """`pt2kit triage --out OUT/NAME -- python BUG`, timed; stopped past ``cap`` seconds (exit 124)."""
    folder = out / bug.stem
    # pt2kit.triage's own main, not `pt2kit triage`: that finds its tools by their installed metadata, which a
    # run from the source trees (the GPU machine: tests/real/gpu/device_realbugs.sh) has none of
    cmd = [sys.executable, "-m", "pt2kit.triage", "--out", str(folder), "--timeout", str(int(timeout)),
           "--", "python", str(bug)]
    rc, wall, said = _run(cmd, out, cap, env=_fresh_cache(_env_with_python_first(), out, f"{bug.stem}-triage"))
    # the whole of it: each step's own last word (minify's "nothing to minify", say) is where a miss is lost
    (out / f"{bug.stem}.triage.log").write_text(said)
    return {"triage_exit": rc, "wall_s": wall, "triage_tail": _tail(said)}


def _section(report: str, name: str) -> str:
    m = re.search(rf"^#+ {name}\s*$(.*?)(?=^#+ |\Z)", report, re.M | re.S)
    return m.group(1).strip() if m else ""


def read_report(folder: Path) -> dict[str, str]:
    """bug-report.md's title line and its bisection section ('' where absent)."""
    path = folder / "bug-report.md"
    if not path.is_file():
        return {"title": "", "bisection": ""}
    text = path.read_text()
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return {"title": re.sub(r"^(#+\s*|Title:\s*)", "", first).strip(), "bisection": _section(text, "Bisection")}


def repro_ops(repro: Path) -> list[str]:
    """The distinct operators a repro calls (torch.ops.NS.OP, aten.OP): what a maintainer reads first."""
    text = repro.read_text()
    ops = re.findall(r"torch\.ops\.(\w+\.\w+)", text)
    return sorted(set(ops))


def _short(op: str) -> str:
    """``aten.slice_scatter.default`` -> ``slice_scatter``: the name a title or a bisection says."""
    parts = [p for p in op.split(".") if p not in ("aten", "prims", "default", "Tensor", "Scalar")]
    return parts[0] if parts else op


def culprit(fields: dict[str, str], report: dict[str, str]) -> str:
    """Which of the fix's op and stage the title or bisection names: 'op+stage', 'op', 'stage' or 'no'."""
    said = (report["title"] + "\n" + report["bisection"]).lower()
    op = _short(fields.get("op", "")).lower()
    stage = fields.get("stage", "").lower()
    # "eager" alone is no Dynamo verdict: every accuracy title compares against eager
    stage_words = {"aot": ("aot", "autograd"), "dynamo": ("dynamo",), "inductor": ("inductor",)}
    hit_op = bool(op) and op in said
    hit_stage = any(w in said for w in stage_words.get(stage, (stage,)))
    return "+".join(n for n, hit in (("op", hit_op), ("stage", hit_stage)) if hit) or "no"


def check(bug: Path, out: Path, py213: str | None, timeout: float) -> dict[str, object]:
    """The checks of one bug whose triage folder is OUT/NAME."""
    fields, folder = header(bug), out / bug.stem
    row: dict[str, object] = {"bug": bug.stem, "class": fields.get("class", ""), "i57": fields.get("issue57", "")}
    report = read_report(folder)
    repro = folder / "repro.py"
    row.update(title=report["title"], culprit=culprit(fields, report) if report["title"] else "-")
    row["repro"] = repro.is_file()
    if repro.is_file():
        row["ops"] = repro_ops(repro)
        rc, _, said = _run([sys.executable, str(repro)], folder, timeout,
                           env=_fresh_cache(dict(os.environ), out, f"{bug.stem}-repro-buggy"))
        row.update(repro_211=rc, repro_211_tail=_tail(said))
        if py213:
            rc, _, said = _run([py213, str(repro)], folder, timeout,
                               env=_fresh_cache(dict(os.environ), out, f"{bug.stem}-repro-fixed"))
            row.update(repro_213=rc, repro_213_tail=_tail(said))
    return row


def one(bug: Path, out: Path, args: argparse.Namespace) -> dict[str, object]:
    """Triage (unless reused) and check one bug; its row also lands in OUT/NAME.json."""
    saved = out / f"{bug.stem}.json"
    ran = triage(bug, out, args.timeout, args.triage_timeout or 3 * args.timeout) if not args.no_triage else (
        {k: v for k, v in json.loads(saved.read_text()).items() if k in ("triage_exit", "wall_s", "triage_tail")}
        if saved.is_file() else {"triage_exit": None, "wall_s": None})
    row = {**ran, **check(bug, out, args.py213, args.timeout)}
    saved.write_text(json.dumps(row, indent=1))
    return row


def _reread(bug: Path, out: Path) -> dict[str, object]:
    """A saved row, its culprit judged again from the report (the rule may have changed since)."""
    saved = out / f"{bug.stem}.json"
    if not saved.is_file():
        return {"bug": bug.stem, "class": header(bug).get("class", ""), "i57": header(bug).get("issue57", "")}
    row = json.loads(saved.read_text())
    report = read_report(out / bug.stem)
    row["culprit"] = culprit(header(bug), report) if report["title"] else "-"
    return row


def passed(row: dict[str, object]) -> bool:
    """Every check of issue 57's `nox -s realbugs`: exit 1, a repro failing alone on 2.11 and passing on 2.13."""
    return row.get("triage_exit") == 1 and row.get("repro_211") == 1 and row.get("repro_213") == 0


def table(rows: list[dict[str, object]]) -> str:
    def cell(r: dict[str, object]) -> list[str]:
        ops = r.get("ops")
        return [str(r["bug"]), str(r["class"]), str(r["i57"]), str(r.get("triage_exit")),
                "yes" if r.get("repro") else "no", _yn(r.get("repro_211"), 1), _yn(r.get("repro_213"), 0),
                f"{len(ops)}: {','.join(_short(o) for o in ops)}" if ops else "-", str(r.get("culprit")),
                str(r.get("wall_s"))]
    body = [cell(r) for r in rows]
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(c) + " |" for c in body]
    ok = sum(passed(r) for r in rows)
    lines.append(f"\n{ok} of {len(rows)}: triage exit 1 and a repro.py that fails alone on the buggy torch and "
                 "passes on the fixed one")
    return "\n".join(lines)


def _yn(rc: object, want: int) -> str:
    return "-" if rc is None else ("yes" if rc == want else f"no ({rc})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for triage's folders and the rows")
    ap.add_argument("--py213", default=os.environ.get("PT2KIT_TORCH213_PYTHON"),
                    help="an interpreter with the fixed torch [env PT2KIT_TORCH213_PYTHON]")
    ap.add_argument("--jobs", type=int, default=1, help="bugs triaged at once (default 1)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per step of triage and per repro run")
    ap.add_argument("--triage-timeout", type=float, help="seconds for one bug's whole triage (default 3x --timeout)")
    ap.add_argument("--only", nargs="*", help="bug names (file stems) to run")
    ap.add_argument("--no-triage", action="store_true", help="check the folders a run left in --out")
    ap.add_argument("--table", action="store_true", help="only print the table of the rows a run left in --out")
    args = ap.parse_args(argv)
    if args.py213 and not Path(args.py213).is_file():
        print(f"run.py: --py213 {args.py213}: no such interpreter", file=sys.stderr)
        return 2
    todo = bugs(args.only)
    if not todo:
        print("run.py: no bug matches --only", file=sys.stderr)
        return 2
    if args.table:
        rows = [_reread(b, args.out) for b in todo]
        print(table(rows))
        return 0 if all(passed(r) for r in rows) else 1
    args.out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda b: one(b, args.out.resolve(), args), todo))
    print(table(rows))
    return 0 if all(passed(r) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
