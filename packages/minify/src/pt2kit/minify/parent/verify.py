"""The repro's verification: repro.py run in fresh processes, side by side, and how many failed the
same way (exit 1). Torch-free (the runs hold torch)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from .pool import Pool

RUNS = 3


def verify(text: str, pool: Pool, first: bool = False) -> tuple[int, list[str]]:
    """Run repro.py in fresh processes, side by side: how many runs failed the same way (exit 1), and
    for each run that did not, its exit and the last line it printed. ``first``: one run, then the other
    two only where it did not fail so (a deterministic failure, a compile error, is shown by one fresh
    run: AOT Inductor's builds, one at a time under the machine-wide lock, cost three builds for three).

    Forked from the pool's fork server (a process that has only imported torch) when the environment
    it imported under is the repro's, less pt2kit's own variables (torch reads none of them while it
    imports: a PT2KIT_STORE alone made every verification a fresh interpreter, 5 s of import each);
    else plain ``python repro.py``."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "repro.py"
        path.write_text(text)
        ended = _fresh_runs(1 if first else RUNS, path, pool)
        if first and ended[0][0] != 1:
            ended += _fresh_runs(RUNS - 1, path, pool)
    others = []
    for code, out, err in ended:
        if code != 1:
            lines = (out or err).decode(errors="replace").strip().splitlines()
            others.append(f"exit {code}" + (f": {lines[-1][:300]}" if lines else ""))
    return len(ended) - len(others), others


def _fresh_runs(n: int, path: Path, pool: Pool) -> list[tuple[int, bytes, bytes]]:
    """``n`` runs of ``path`` at once (see :func:`verify`): each one's exit code, stdout and stderr."""
    env = {k: v for k, v in pool.env.items() if not k.startswith(("PT2KIT", "TORCHINDUCTOR_INJECT"))}
    procs: list[Any] = []
    if pool.zygote is not None and all(k.startswith("PT2KIT") for k in pool.env.keys() - env.keys()):
        procs = [c for c in (pool.zygote.spawn("run", argv=[str(path)], cwd=str(path.parent), env=env)
                             for _ in range(n)) if c]
        for c in procs:
            c.stdin.close()
    procs += [subprocess.Popen([sys.executable, str(path)], cwd=path.parent, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE) for _ in range(n - len(procs))]
    said: list[list[bytes]] = [[b"", b""] for _ in procs]

    def drain(i: int, j: int, stream: Any) -> None:
        said[i][j] = stream.read()

    readers = [threading.Thread(target=drain, args=(i, j, st), daemon=True)
               for i, p in enumerate(procs) for j, st in enumerate((p.stdout, p.stderr))]
    for t in readers:
        t.start()
    codes = [p.wait() for p in procs]
    for t in readers:
        t.join(timeout=5)
    return [(code, out, err) for code, (out, err) in zip(codes, said, strict=True)]
