"""Which stage of the compiler breaks the repro minify made, parent side and torch-free: PyTorch's
compiler bisector (``torch._inductor.compiler_bisector``), walked on the repro's one small graph in the
warm workers (:mod:`..worker.bisectwork`) instead of a run of the user's script per step.

1. The backends of torch's chain, side by side: eager (Dynamo alone), aot_eager (AOTAutograd),
   aot_eager_decomp_partition (its decompositions and partitioner), then the repro's own backend
   (inductor, or a backend of the user's). The first that fails as the repro does is the stage.
2. aot_eager_decomp_partition or Inductor: each of its subsystems, in torch's list and order, switched
   off, side by side (a counted one with ``TORCH_BISECT_MAX=-1``, a config change flipped); the first
   whose switch makes the repro pass. A user's backend gets Inductor's (its switches reach Inductor
   only if the backend calls it: the runs say whether it does).
3. A counted subsystem: its applications counted with all on, then binary-searched (k-ary, one point
   per worker) to the first application that makes it fail, named by torch's debug info.
4. Faithfulness: the answer is run again, off then on (``TORCH_BISECT_MAX=k-1`` and ``=k``; the config
   flipped and not; the backend before and the culprit), and is "found" only where off passes and on
   fails as the repro does. Every run is judged by the repro's own judgement (:func:`..worker.work.query`).

Where no stage can be told (a failure of eager itself, a backend of the user's that calls no Inductor,
nothing that flips) the record says so, with the runs that show it.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from pt2kit_portable import same_death

CHAIN = ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor")
WHAT = {"eager": "Dynamo alone (the eager backend)", "aot_eager": "AOTAutograd (the aot_eager backend)",
        "aot_eager_decomp_partition": "AOTAutograd's decompositions and partitioner (aot_eager_decomp_partition)",
        "inductor": "Inductor"}
# what a query says of a run that shows no failure at all (the compiled side raising as eager does: where eager
# raises, what a fixed compiler does)
PASSES = ("passes", "finite", "clean", "raises as eager does")


class Run(msgspec.Struct, kw_only=True):
    """One step: its setting in words, and how the repro's judgement saw it."""

    setting: str
    fails: bool  # as the repro fails
    clean: bool  # no failure of any kind
    signature: str
    applications: list[list[Any]] = []  # (subsystem, number, ran, debug info) of the backend's subsystems
    census: str | None = None  # the backend whose subsystems' applications this run counted, all on
    switched: bool = True  # False: this torch could not switch it (a backend of the user's under the switches)
    installed: list[str] = []  # ops whose decomposition the run put into Inductor's table (a user's backend's)
    counted: bool = True  # False: the worker died or timed out, so the applications it counted never came back

    def of(self, subsystem: str) -> list[list[Any]]:
        return [a for a in self.applications if a[0] == subsystem]

    def record(self) -> dict[str, Any]:
        return {"setting": self.setting, "fails": self.fails, "signature": self.signature}


class Bisector:
    """The steps of one bisection, asked of the pool's warm workers (as many at once as it has)."""

    def __init__(self, pool: Any, query: dict[str, Any], failure: dict[str, Any], tested: str, say: Any) -> None:
        self.pool, self.query, self.failure, self.tested, self.say = pool, query, failure, tested, say
        self.steps = 0
        self.width = max(1, len(pool.workers))

    def ask(self, settings: list[dict[str, Any]]) -> list[Run]:
        payloads = []
        for s in settings:
            q = {**self.query, "backend": s.get("backend", self.tested)}
            if s.get("config"):
                q["config"] = {m: {**q["config"].get(m, {}), **kv} for m, kv in {**q["config"], **s["config"]}.items()}
            payloads.append({"query": q, "switch": s.get("switch"), "keep": s.get("keep", False)})
        self.steps += len(payloads)
        runs = [self._run(s["label"], a) for s, a in zip(settings, self.pool.map("bisect", payloads), strict=True)]
        for s, r in zip(settings, runs, strict=True):
            if s.get("switch") and s["switch"]["subsystem"] is None and r.switched:
                r.census = s["switch"]["backend"]
        return runs

    def _run(self, label: str, a: dict[str, Any]) -> Run:
        t = a.get("t")
        if t == "done":
            r = a["result"]
            sig = r.get("signature") or ""
            return Run(setting=label, fails=bool(r["fails"]), clean=not r["fails"] and sig in PASSES, signature=sig,
                       applications=r.get("applications") or [], switched=r.get("switched", True),
                       installed=r.get("installed") or [])
        if t == "died":  # a crash repro's worker dies: the failure, where the signal is the repro's
            same = self.failure["kind"] == "crash" and same_death(self.failure.get("signature"), a["signal"])
            return Run(setting=label, fails=same, clean=False, signature=f"died with {a['signal']}", counted=False)
        if t == "timeout":
            return Run(setting=label, fails=False, clean=False, signature="timed out", counted=False)
        return Run(setting=label, fails=False, clean=False, signature=f"{a.get('type')}: {str(a.get('message'))[:200]}")


def switch(backend: str, subsystem: str | None, limit: int = -1, keep: bool = False) -> dict[str, Any]:
    """A step with one subsystem switched as PyTorch's variables switch it; ``subsystem`` None: a census
    (nothing switched off, every application of ``backend``'s subsystems counted)."""
    words = f"TORCH_BISECT_BACKEND={backend}" + (f" TORCH_BISECT_SUBSYSTEM={subsystem} TORCH_BISECT_MAX={limit}"
                                                 if subsystem is not None else "")
    return {"switch": {"backend": backend, "subsystem": subsystem, "limit": limit}, "keep": keep, "label": words}


def bisect(pool: Any, query: dict[str, Any], failure: dict[str, Any], tested: str, say: Any) -> dict[str, Any]:
    """The `bisect` record's fields (less model, graph, phase) of the repro whose query payload is ``query``."""
    start = time.monotonic()
    b = Bisector(pool, query, failure, tested, say)
    own = tested not in CHAIN
    names = [*CHAIN[:3], tested] if own else list(CHAIN[:CHAIN.index(tested) + 1])
    say(f"bisect: the repro with {', '.join(names)}, side by side")
    # the last: a census of its subsystems' applications (the repro's own backend, nothing switched off)
    # a registered name torch.compile would swap for TORCH_BISECT_BACKEND's: run as it is
    census = {} if own and ":" not in tested else switch("inductor" if own else tested, None, keep=own)
    runs = b.ask([{"backend": n, "label": f"backend {n}"} for n in names[:-1]] + [{**census, "label": f"backend {tested}"}])
    out: dict[str, Any] = {"tested": tested, "chain": {n: r.fails for n, r in zip(names, runs, strict=True)}}
    first = next((i for i, r in enumerate(runs) if r.fails), None)
    if first is None or not runs[-1].fails:
        out.update(verdict=f"the repro does not fail with {tested} in the bisection's own run ({runs[-1].signature}): "
                           "no stage told", on=runs[-1].record())
    elif first == 0:
        out.update(backend="eager", found=True, on=runs[0].record(),
                   env={"TORCH_BISECT_BACKEND": "eager"} if not own else {},
                   verdict="it fails with the eager backend already (Dynamo alone: no AOTAutograd, no Inductor): "
                           "Dynamo's, or the graph's own, not a later stage")
    elif names[first] == "aot_eager":
        out.update(backend="aot_eager", found=runs[0].clean, off=runs[0].record(), on=runs[1].record(),
                   env={"TORCH_BISECT_BACKEND": "aot_eager"} if not own else {},
                   verdict=f"AOTAutograd: eager {_said(runs[0])}, aot_eager fails")
    elif own and first == len(names) - 1:
        out.update(_own(b, tested, runs))
    else:
        out.update(_subsystems(b, names[first], runs[first - 1], runs[first]))
    out.update(steps=b.steps, wall_s=round(time.monotonic() - start, 2))
    return out


def _said(r: Run) -> str:
    return "passes" if r.clean else f"shows {r.signature}" if not r.fails else "fails"


def _own(b: Bisector, tested: str, runs: list[Run]) -> dict[str, Any]:
    """A backend of the user's fails where torch's chain passes: Inductor's switches, with the backend
    kept, say which of its subsystems matters where the backend calls Inductor; else no stage is told."""
    said = f"eager, aot_eager and aot_eager_decomp_partition pass; {tested}, a backend of your own, fails"
    untold = {"backend": tested, "off": runs[-2].record(), "on": runs[-1].record(), "found": runs[-2].clean}
    if not runs[-1].switched:
        return {**untold, "verdict": f"{said}; this torch cannot keep a backend of your own under its bisector's "
                                     "switches (it would swap in Inductor): no stage told"}
    if runs[-1].census != "inductor":
        return {**untold, "verdict": f"{said}: a registered backend that is not Inductor, whose stages PyTorch's "
                                     "bisector cannot tell"}
    if not runs[-1].applications:
        return {**untold, "verdict": f"{said}, and calls no Inductor (none of its subsystems applied): its stages "
                                     "are its own, which PyTorch's bisector cannot tell"}
    told = _subsystems(b, "inductor", runs[-2], runs[-1], keep=True)
    if told.get("subsystem") and told.get("found"):
        return {**told, "backend": tested, "verdict": f"{tested} (a backend of your own) calls Inductor: "
                                                       + told["verdict"]}
    if runs[-1].installed:  # tests/bisect/wrong_decomp.py's: PyTorch's bisector names it on the script, where
        # the table is changed for aot_eager_decomp_partition too; here only the backend installs it
        ops = ", ".join(runs[-1].installed)
        return {**untold, "verdict": f"{said}; it calls Inductor and puts its own decomposition of {ops} into "
                                     "Inductor's table, which PyTorch's bisector cannot switch off with your backend "
                                     "kept (it switches decompositions only with aot_eager_decomp_partition in your "
                                     "backend's place, which passes without yours), and switching off none of "
                                     "Inductor's subsystems makes it pass: no stage told"}
    return {**untold, "verdict": f"{said}; it calls Inductor, but switching off none of Inductor's subsystems "
                                 "makes it pass: no stage told"}


def _subsystems(b: Bisector, backend: str, before: Run, on: Run, keep: bool = False) -> dict[str, Any]:
    """The first of ``backend``'s subsystems (torch's order) whose switch makes the repro pass; its
    application. A counted subsystem the census saw no application of is not tried (nothing to switch); where
    the census died (a crash repro's kernel kills its worker after the compile counted them), every counted
    subsystem is tried, all of it off, and its applications are searched without their number."""
    plan = b.pool.ask("bisect_plan", {"backends": [backend]}).get("result", {}).get(backend, [])
    told = {"backend": backend, "off": before.record(), "on": on.record(), "found": before.clean,
            "env": {"TORCH_BISECT_BACKEND": backend} if not keep else {}}
    if not plan:
        return {**told, "verdict": f"{WHAT[backend]} fails where the stage before it passes; this torch's bisector "
                                   "lists no subsystems of it"}
    census = on if on.census == backend else b.ask([switch(backend, None, keep=keep)])[0]
    tried = [p for p in plan if (not _already(b, p["config"]) if "config" in p
                                 else bool(census.of(p["name"])) or not census.counted)]
    b.say(f"bisect: {backend} fails; its subsystems switched off in torch's order, {b.width} at a time: "
          + ", ".join(f"{p['name']}" + ("" if "config" in p else f" ({len(census.of(p['name'])) if census.counted else '?'})")
                      for p in tried))
    hit = None
    for i in range(0, len(tried), b.width):
        chunk = tried[i:i + b.width]
        runs = b.ask([({"config": p["config"], "label": _config_words(p["config"])} if "config" in p
                       else switch(backend, p["name"], -1, keep)) for p in chunk])
        hit = next(((p, r) for p, r in zip(chunk, runs, strict=True) if r.clean), None)
        if hit is not None:
            break
    if hit is None:
        return {**told, "verdict": f"{WHAT[backend]} fails where the stage before it {_said(before)}; switching off "
                                   f"none of its subsystems ({', '.join(p['name'] for p in tried)}) makes it pass"}
    p, off = hit
    if "config" in p:
        config = _config_words(p["config"])
        return {**told, "subsystem": p["name"], "config": config, "off": off.record(), "found": on.fails, "env": {},
                "verdict": f"{WHAT[backend]}: {config} makes it pass"}
    return {**told, **_applications(b, backend, p["name"], keep, off,
                                     len(census.of(p["name"])) if census.counted else None)}


def _applications(b: Bisector, backend: str, name: str, keep: bool, all_off: Run, n: int | None) -> dict[str, Any]:
    """The first application of subsystem ``name`` (``n`` of them; None: not counted) that makes the repro
    fail, applications 0..k on (k-ary: a point per worker); then the two runs that check it,
    ``TORCH_BISECT_MAX=k-1`` (must pass) and ``=k`` (must fail), taken from the search where it made them."""
    b.say(f"bisect: {backend} {name} off makes it pass; {n if n is not None else 'uncounted'} application(s): searching")
    seen = {-1: all_off}
    lo, hi = -1, n - 1 if n is not None else _bound(b, backend, name, keep, seen)  # 0..lo on passes; 0..hi fails
    if hi is None:
        return {"subsystem": name, "found": False, "verdict": f"{WHAT[backend]}: {name} off makes it pass, but no "
                                                              f"count of its applications up to {BOUND} fails"}
    while hi - lo > 1:
        width = min(b.width, hi - lo - 1)
        points = sorted({lo + (hi - lo) * (i + 1) // (width + 1) for i in range(width)} - {lo, hi})
        runs = b.ask([switch(backend, name, k, keep) for k in points])
        seen.update(zip(points, runs, strict=True))
        failing = [k for k, r in zip(points, runs, strict=True) if r.fails]
        hi = min(failing, default=hi)
        lo = max((k for k in points if k < hi), default=lo)
    missing = [k for k in (hi - 1, hi) if k not in seen]
    seen.update(zip(missing, b.ask([switch(backend, name, k, keep) for k in missing]), strict=True))
    off, on = seen[hi - 1], seen[hi]
    what = next((a[3] for a in on.of(name) if a[1] == hi), None)
    env = {"TORCH_BISECT_BACKEND": backend, "TORCH_BISECT_SUBSYSTEM": name, "TORCH_BISECT_MAX": str(hi)}
    found = off.clean and on.fails
    check = "" if found else f" (not confirmed: with it off the repro {_said(off)}, with it on it {_said(on)})"
    return {"subsystem": name, "application": hi, "applications": n, "what": what, "env": {} if keep else env,
            "found": found, "off": off.record(), "on": on.record(),
            "verdict": f"{WHAT[backend]}: {name}, application {hi}" + (f" of {n}" if n is not None else "")
                       + (f" ({what})" if what else "") + check}


BOUND = 1 << 12  # the most applications searched where none were counted: a repro's one small graph has few


def _bound(b: Bisector, backend: str, name: str, keep: bool, seen: dict[int, Run]) -> int | None:
    """The first of applications 0, 0..1, 0..3, 0..7, ... on (a point per worker) that makes the repro fail,
    where the census could not count them; each run kept in ``seen`` for the search. None: none up to
    :data:`BOUND`."""
    limits = [(1 << j) - 1 for j in range(BOUND.bit_length())]
    for i in range(0, len(limits), b.width):
        points = limits[i:i + b.width]
        runs = b.ask([switch(backend, name, k, keep) for k in points])
        seen.update(zip(points, runs, strict=True))
        hit = next((k for k, r in zip(points, runs, strict=True) if r.fails), None)
        if hit is not None:
            return hit
    return None


def _already(b: Bisector, config: dict[str, dict[str, str]]) -> bool:
    """Whether the repro compiles under this config change already (its own config, or the precision it
    is judged under: the accuracy harness's sets fallback_random), so flipping it changes nothing."""
    precision = b.failure.get("precision") or {}
    return all(b.query["config"].get(m, {}).get(k) == v or (m == "torch._inductor.config" and k in precision
                                                            and repr(precision[k]) == v)
               for m, kv in config.items() for k, v in kv.items())


def _config_words(config: dict[str, dict[str, str]]) -> str:
    return ", ".join(f"{m}.{k}={v}" for m, kv in config.items() for k, v in kv.items())
