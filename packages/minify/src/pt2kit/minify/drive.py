"""One model, parent side: warm the workers, capture and reproduce the failure, search, write and
verify the repro. Torch-free (the workers hold torch)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from pt2kit.runtime.errors import EXIT_CRASH, EXIT_FINDINGS, EXIT_OK, UsageError

from . import __version__, ir, repro
from .job import Job
from .pool import Pool
from .records import config_strings
from .search import Searcher

RUNS = 3


@dataclass
class Outcome:
    code: int
    message: str
    fields: dict[str, Any] = field(default_factory=dict)  # the repro record's, when one was made
    text: str | None = None  # repro.py


def _original(pool: Pool, job: Job, stage: Any, on_model: Any) -> tuple[list[ir.Graph], dict[str, Any], dict[str, Any]]:
    got: dict[str, Any] = {}

    def on_message(m: dict[str, Any]) -> None:
        if m.get("t") == "stage":
            stage(m["stage"])
        elif m.get("t") == "model":
            on_model(m["fields"])
        elif m.get("t") == "graphs":
            got["graphs"] = msgspec.convert(m["graphs"], list[ir.Graph])
            got["config"] = m["config"]

    a = pool.ask("capture", msgspec.to_builtins(job), on_message)
    if a["t"] == "raised":
        if a["type"] in ("UsageError", "ModelFileError"):
            raise UsageError(a["message"])
        return got.get("graphs", []), got.get("config", {}), {"kind": "error", "why": f"{a['type']}: {a['message']}"}
    if a["t"] == "died":
        return got.get("graphs", []), got.get("config", {}), {"kind": "crash", "signature": a["signal"],
                                                              "detail": a["stderr"][-2000:]}
    if a["t"] == "timeout":
        return got.get("graphs", []), got.get("config", {}), {"kind": "error", "why": "the original run timed out"}
    return got.get("graphs", []), got.get("config", {}), a["result"]


def _verify(text: str, jobs: int) -> int:
    """Run repro.py in fresh processes; how many runs failed the same way (exit 1)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "repro.py"
        path.write_text(text)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PT2KIT", "TORCHINDUCTOR_INJECT"))}
        # side by side: each run is mostly importing torch and waiting on the compiler
        procs = [subprocess.Popen([sys.executable, str(path)], cwd=d, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for _ in range(RUNS)]
        return sum(p.wait() == 1 for p in procs)


def minify_one(job: Job, *, want: dict[str, Any] | None, jobs: int, timeout: float | None, stage: Any,
               torch_version: str, check_str: str | None = None, on_model: Any = None) -> Outcome:
    """``want``: the failure a stream record named (kind, and for a violation its constraint and op)."""
    start = time.monotonic()
    pool = Pool(jobs, timeout=timeout)
    try:
        graphs, config, seen = _original(pool, job, stage, on_model or (lambda f: None))
        failure = _failure(job, want, seen)
        if failure is not None and check_str and "why" not in failure:
            if check_str not in f"{seen.get('signature', '')} {seen.get('detail', '')}":
                return Outcome(EXIT_OK, f"the {failure['kind']} failure ({failure.get('signature', '')}) does not "
                                        f"hold --check-str {check_str!r}: nothing to minify")
            failure["check_str"] = check_str
        if failure is None:
            return Outcome(EXIT_OK, f"no failure to minify: {job.model} runs the same eagerly and with {job.backend}")
        if "why" in failure:
            return Outcome(EXIT_CRASH, failure["why"])
        if not graphs:
            return Outcome(EXIT_CRASH, f"the failure ({failure['kind']}) happens before any graph reaches the backend "
                                       "(in Dynamo): minify works on the graphs it is handed")
        stage(f"{failure['kind']}: {failure.get('signature', '')}; checking it on the captured graph(s)")
        wholes = [ir.build(g, {n.name for n in g.compute}) for g in graphs]
        searchers = [Searcher(pool, g, failure, job.backend, config, jobs=jobs, on_step=stage, seed=job.seed)
                     for g in graphs]
        found = None
        for g, w, s in zip(graphs, wholes, searchers, strict=True):
            # accuracy: the localising compile is the check (a diverging node means the graph fails)
            if w is not None and failure["kind"] == "accuracy" and s.localize_first():
                found = (g, w, s)
                break
            if w is not None and s.fails([w])[0]:
                found = (g, w, s)
                break
        if found is None:
            others = "; ".join(f"{k}" for k in {k: 1 for s in searchers for k in s.seen})
            why = "some op has an argument a standalone file cannot write" if any(
                "__unwritable__" in (w.source if w else "") for w in wholes) else (others or "they pass")
            return Outcome(EXIT_CRASH, f"the {failure['kind']} failure ({failure.get('signature', '')}) does not "
                                       f"reproduce on the captured graph(s) with seeded inputs ({why})")
        g, whole, s = found
        best, keep = s.minimize(whole)
        best, _ = s.shrink_shapes(keep, best)
        final_config = s.drop_config(best)
        queries = sum(x.queries for x in searchers)
        stage(f"verifying the repro ({best.nodes} ops) in {RUNS} fresh processes")
        text = repro.render(best, failure=failure, backend=job.backend, config=final_config, model=job.model,
                            graph=g.index, torch_version=torch_version, dynamic=g.dynamic, seed=job.seed,
                            tool_version=__version__)
        k = _verify(text, jobs)
        fields = dict(failure=failure["kind"], signature=failure.get("signature"), graph=g.index,
                      nodes_before=whole.nodes, nodes_after=best.nodes, ops=best.ops,
                      inputs_before=whole.input_numel, inputs_after=best.input_numel,
                      config=config_strings(final_config),
                      backend=job.backend, queries=queries, wall_s=round(time.monotonic() - start, 2),
                      reproduced=k, runs=RUNS, reproduces=k > 0)
        if k == 0:
            return Outcome(EXIT_CRASH, f"the repro ({best.nodes} ops) did not fail in any of {RUNS} fresh runs",
                           fields, text)
        return Outcome(EXIT_FINDINGS, f"{whole.nodes} -> {best.nodes} ops ({', '.join(dict.fromkeys(best.ops))}), "
                                      f"{queries} queries, reproduced {k} of {RUNS}", fields, text)
    finally:
        pool.close()


def _failure(job: Job, want: dict[str, Any] | None, seen: dict[str, Any]) -> dict[str, Any] | None:
    """The failure to keep: what the original run showed, checked against what was asked for."""
    asked = (want or {}).get("kind") or job.failure
    if asked == "violation":
        if not want or not want.get("op"):
            raise UsageError("--failure violation needs a violation record on stdin (`fxcheck m.py --deny OP | minify`)")
        return {"kind": "violation", "signature": f"{want['constraint']}: {want['op']}", "op": want["op"],
                "dtype": want.get("dtype"), "constraint": want["constraint"]}
    kind = seen.get("kind")
    if kind == "error":
        return {"why": f"the original run failed before the backend did: {seen['why']}"}
    if kind is None:
        if asked not in ("auto", None):
            return {"why": f"asked for a {asked} failure, but {job.model} shows none: it runs the same eagerly and "
                           f"with {job.backend}"}
        return None
    if asked not in ("auto", None) and asked != kind:
        return {"why": f"asked for a {asked} failure, but {job.model} shows {kind}: {seen.get('signature', '')}"}
    return {"kind": kind, "signature": seen.get("signature", kind)}
