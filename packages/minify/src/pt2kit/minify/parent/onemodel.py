"""minify's work on one model, given its failure: the original run in a worker, the failure it shows
checked against what was asked for, the first graph that shows it alone, the search on that graph, and
the repro written, verified in fresh processes and bisected. Separate from :mod:`.drive`, which decides
*which* models there are (the command line's, or each failure a stream names) and writes their records:
this module holds one model's minification from its first run to its :class:`.records.Outcome`, and
knows nothing of stdin, -o or the session. Torch-free (the workers hold torch)."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import msgspec

from pt2kit.runtime.common.caches import modes_in, script_env
from pt2kit.runtime.common.errors import EXIT_CRASH, EXIT_FINDINGS, EXIT_OK, UsageError

from .. import __version__, ir
from ..job import Job
from ..records import Outcome, Want, config_strings, dropped, typed_config
from . import original, repro
from .ahead import Ahead, accuracy_failure, worth_it
from .beside import bisecting
from .pool import Early, Pool
from .search import Searcher
from .verify import RUNS, verify

NOT_A_BUG = ": not a compiler bug by PyTorch's float64 rule"


def minify_one(job: Job, *, want: Want | None, stage: Any, torch_version: str,
               on_model: Any = None, early: Early | None = None, on_caches: Any = None,
               on_verified: Any = None) -> Outcome:
    """``want``: the failure a stream record named (kind, and for a violation its constraint and op);
    ``job.jobs``: the workers, decided (:func:`.drive.workers`). The original run, the failure it shows, the
    graph that shows it alone, then its search and the repro. Every run compiles in the script's Inductor
    cache folder (a piped graph's, :func:`pt2kit.runtime.common.caches.script_env`); under a max-autotune or
    reduce-overhead setting, ``on_caches`` gets the line saying what they read back of it, and their seconds;
    ``on_verified`` the repro's text once a fresh run failed, where its bisection is still to end."""
    start = time.monotonic()
    jobs = job.jobs or 1
    say = _Said(stage)
    bet = worth_it(job, want)
    pool = Pool(max(jobs, 2) if bet else jobs, timeout=job.timeout, early=early,
                env=script_env(job.script_cache, job.cache_given, dict(os.environ)))
    pool.caches.script, pool.caches.given = job.script_cache, job.cache_given
    got: dict[str, Any] = {}
    config: dict[str, Any] = {}
    try:
        graphs, config, seen = original.ask(pool, job, say, on_model or (lambda f: None), got, bet)
        if want is not None and want.said and seen.get("kind") is None:  # the diff handed over and this run disagree
            return Outcome(EXIT_OK, f"{want.said}; minify's own run of it: {seen.get('detail') or 'passes'}"
                                    f"{NOT_A_BUG if 'but is within' in (seen.get('detail') or '') else ''}: "
                                    "nothing to minify")
        failure = _failure(job, want, seen, got.get("precision"), got.get("autocast"))
        if failure is not None and "why" not in failure and got.get("autocast"):  # every side of every run under it
            failure["autocast"] = got["autocast"]
        if failure is not None and failure.get("rule") == "close" and "but is within" in seen.get("verdicts", ""):
            say(f"{seen['verdicts']}{NOT_A_BUG}; minified as the close failure the diff's --verdict close asks for")
        early: Ahead | None = got.pop("early", None)
        ahead = early if early is not None and early.take(failure, jobs) else None
        stop = _nothing_to_search(job, failure, seen, graphs)
        if stop is not None:
            return stop
        graphs = ir.searched(graphs, failure.get("phase"), job.mode == "train")
        say(f"{failure['kind']}{' of the backward' if failure.get('phase') else ''}: {failure.get('signature', '')}; "
            "checking it on the captured graph(s)")
        searchers = [Searcher(pool, g, failure, job.backend, config, jobs=jobs, on_step=say, seed=job.seed)
                     for g in graphs]
        if ahead is not None:  # its answers hold for this failure: graph 0's search goes on from them
            searchers[0] = ahead.searcher
            searchers[0].on_step = say
        found = _showing(graphs, searchers, failure, ahead, say)
        if isinstance(found, Outcome):
            return found
        return _repro(job, found, failure, config, searchers, pool, say, torch_version, start, on_verified)
    finally:
        if "early" in got:  # stopped before the original run was judged (a bad model file)
            got["early"].cancel()
        line = pool.cache_line(modes_in(config))
        if line and on_caches is not None:
            on_caches(line)
        pool.close()


class _Said:
    """The stage line, said from several threads (the search ahead speaks from its own)."""

    def __init__(self, stage: Any) -> None:
        self.stage, self.lock = stage, threading.Lock()

    def __call__(self, m: str) -> None:
        with self.lock:
            self.stage(m)


def _nothing_to_search(job: Job, failure: dict[str, Any] | None, seen: dict[str, Any],
                       graphs: list[ir.Graph]) -> Outcome | None:
    """The end, when the original run leaves nothing to search: no failure (or not the one --check-str
    asks for), a failure of the run itself, or one before any graph reached the backend. None: search."""
    check_str = job.check_str
    if failure is not None and check_str and "why" not in failure:
        if check_str not in f"{seen.get('signature', '')} {seen.get('detail', '')}":
            return Outcome(EXIT_OK, f"the {failure['kind']} failure ({failure.get('signature', '')}) does not "
                                    f"hold --check-str {check_str!r}: nothing to minify")
        failure["check_str"] = check_str
    if failure is None and job.profile is not None:
        return Outcome(EXIT_OK, f"no violation to minify: fxcheck's checks find none in {job.model}'s forward "
                                "graphs that minify keeps (deny, dtype, align on an aten op)")
    if failure is None and seen.get("nothing_compiled"):  # not a pass: the compiler never ran
        return Outcome(EXIT_FINDINGS, f"{seen['nothing_compiled']}: nothing to minify, no repro written")
    if failure is None:
        step = ", a training step's outputs and gradients" if job.mode == "train" else ""
        return Outcome(EXIT_OK, f"no failure to minify: {job.model} runs the same eagerly and with {job.backend}"
                                f"{step}")
    if "why" in failure:
        return Outcome(EXIT_CRASH, failure["why"], unshown=bool(failure.get("unshown")))
    if not graphs:
        return Outcome(EXIT_CRASH, f"the failure ({failure['kind']}) happens before any graph reaches the backend "
                                   "(in Dynamo): minify works on the graphs it is handed", unshown=True)
    return None


class _Found(msgspec.Struct, frozen=True):
    """The graph that shows the failure alone: its whole candidate, its searcher, and the search's result
    when the search ahead already made it."""

    graph: ir.Graph
    whole: ir.Candidate
    searcher: Any
    done: Any = None


def _showing(graphs: list[ir.Graph], searchers: list[Searcher], failure: dict[str, Any], ahead: Ahead | None,
             say: Any) -> _Found | Outcome:
    """The first graph whose whole candidate fails so, with seeded inputs, else with the real values of
    its small inputs; the end (exit 3, and why) when none does."""
    wholes = [s.whole() for s in searchers]
    for g, w, s in zip(graphs, wholes, searchers, strict=True):
        if ahead is not None and s is ahead.searcher and ahead.result is not None:  # found ahead
            return _Found(g, w, s, ahead.result)
        if _shows(s, w, failure):
            return _Found(g, w, s)
    real = False
    if failure["kind"] != "violation":  # seeded inputs do not show it: real values may
        for g, s in zip(graphs, searchers, strict=True):
            w = s.with_real_values()
            if w is not None:
                real = True
                say(f"seeded inputs pass: graph {g.index} with the real values of {len(w.exact())} small input(s)")
                if _shows(s, w, failure):
                    return _Found(g, w, s)
    others = "; ".join(f"{k}" for k in {k: 1 for s in searchers for k in s.seen})
    why = "some op has an argument a standalone file cannot write" if any(
        w is None or g.unwritable for g, w in zip(graphs, wholes, strict=True)) else (others or "they pass")
    also = ", nor with the real values of its small inputs" if real else ""
    return Outcome(EXIT_CRASH, f"the {failure['kind']} failure ({failure.get('signature', '')}) does not "
                               f"reproduce on the captured graph(s) with seeded inputs{also} ({why})", unshown=True)


def _repro(job: Job, found: _Found, failure: dict[str, Any], config: dict[str, Any], searchers: list[Searcher],
           pool: Pool, say: _Said, torch_version: str, start: float, on_verified: Any = None) -> Outcome:
    """The search on the graph that shows the failure (unless the search ahead made it), then repro.py
    written and verified in fresh processes (its short form first, where the failure allows one:
    :func:`_verified`), bisected (beside, where the machine has the cores: :mod:`.beside`) unless --no-bisect:
    the model's end."""
    g, whole, s = found.graph, found.whole, found.searcher
    best, final_config = found.done if found.done is not None else s.search(whole)
    queries = sum(x.queries for x in searchers)
    # the compiler raises on that program, or returns where eager raises: one fresh run shows it
    once = failure["kind"] in ("compile-error", "missing-error")
    query = s.payload(best, final_config)
    say.stage(f"verifying the repro ({best.nodes} ops) in {'a fresh process' if once else f'{RUNS} fresh processes'}")
    beside = bisecting(pool, query, failure, job.backend, say) if job.bisect else None
    text = repro.render(best, failure=failure, backend=job.backend, config=final_config, model=job.model,
                        graph=g.index, torch_version=torch_version, dynamic=g.dynamic, seed=job.seed,
                        tool_version=__version__, level=g.level, subgraph=g.subgraph, phase=g.phase, needs=s.needs,
                        dropped=dropped(s.config, final_config))
    try:
        text, k, others = _verified(text, _short(job, g, best, failure, final_config, torch_version, s), pool, say,
                                    once)
    except BaseException:  # (^C) the bisection beside must not go on asking a closing pool
        if beside is not None:
            beside.cancel()
        raise
    runs = k + len(others)
    for why in others:
        say(f"a fresh run of the repro did not fail: {why}")
    fields = dict(failure=failure["kind"], signature=failure.get("signature"), graph=g.index, subgraph=g.subgraph,
                  phase=g.phase,
                  nodes_before=whole.nodes, nodes_after=best.nodes, ops=best.ops,
                  inputs_before=whole.input_numel, inputs_after=best.input_numel,
                  config=config_strings(final_config),
                  backend=job.backend, queries=queries, wall_s=round(time.monotonic() - start, 2),
                  reproduced=k, runs=runs, reproduces=k > 0)
    if k == 0:
        if beside is not None:
            beside.cancel()
        return Outcome(EXIT_CRASH, f"the repro ({best.nodes} ops) did not fail in any of {runs} fresh runs",
                       fields, text)
    where = {"backward": " in the backward graph", "joint": ", run as a training step"}.get(g.phase, "")
    inside = f" inside {g.subgraph}" if g.subgraph else where
    made = Outcome(EXIT_FINDINGS, f"{whole.nodes} -> {best.nodes} ops ({', '.join(dict.fromkeys(best.ops))}){inside}, "
                                  f"{queries} queries, reproduced {k} of {runs}", fields, text, query=query)
    if beside is not None and on_verified is not None:  # a crash's bisection can take minutes: a run stopped
        on_verified(text)  # in it (triage's caller out of time, ^C) keeps the verified repro
    return made if beside is None else beside.into(made)


def _short(job: Job, g: ir.Graph, best: ir.Candidate, failure: dict[str, Any], config: dict[str, Any],
           torch_version: str, s: Searcher) -> str | None:
    """The short form of the repro (:mod:`..judge.short`: PyTorch's own accuracy rule, or an error's signature)
    where the failure allows one (:func:`..judge.plan.short_form`), else None."""
    from ..judge import plan

    check = plan.short_form(failure, job.backend, typed_config(config), [x.as_tuple() for x in best.inputs],
                            best.source, best.ops, level=g.level, phase=g.phase, dynamic=g.dynamic)
    if check is None:
        return None
    return repro.render_short(best, failure=failure, check=check, backend=job.backend, config=config, model=job.model,
                              graph=g.index, torch_version=torch_version, dynamic=g.dynamic, seed=job.seed,
                              tool_version=__version__, level=g.level, subgraph=g.subgraph, needs=s.needs,
                              dropped=dropped(s.config, config), phase=g.phase)


def _verified(text: str, short: str | None, pool: Pool, say: _Said, once: bool) -> tuple[str, int, list[str]]:
    """(the repro written, the fresh runs that failed, what the others did): the short form where there is one and
    it fails in every fresh run (``once``: a compile or missing error, the first run, as for the full form), else
    the full form: the short form is what a maintainer reads in a minute, the full one what the workers judged."""
    if short is not None:
        k, others = verify(short, pool, first=once)
        if not others:
            return short, k, others
        say(f"the short repro failed in {k} of {k + len(others)} fresh runs ({others[0]}): the full one, judged as "
            "minify's workers judge, is written")
    return (text, *verify(text, pool, first=once))


def _shows(s: Searcher, w: ir.Candidate | None, failure: dict[str, Any]) -> bool:
    """Whether the whole graph ``w`` fails so; for accuracy the localising compile is the check (a
    diverging node means the graph fails), and the search starts from it."""
    if w is None:
        return False
    if failure["kind"] == "accuracy" and s.localizes():
        return True
    return s.fails([w])[0]


def _failure(job: Job, want: Want | None, seen: dict[str, Any], precision: dict[str, Any] | None = None,
             autocast: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The failure to keep: what the original run showed, checked against what was asked for; ``autocast``,
    the model file's, is the accuracy failure's as the search ahead bets on it (every kind gets it: minify_one)."""
    asked = want.kind if want is not None else job.failure
    if job.profile is not None:  # the worker's first finding of the profile's checks, sent as a Want
        want = None if seen.get("want") is None else msgspec.convert(seen["want"], Want)
        if want is None:
            return None  # the profile finds nothing minify can keep: nothing to minify
    if asked == "violation" or job.profile is not None:
        if want is None or not want.op:
            raise UsageError("--failure violation needs a violation record on stdin (`fxcheck m.py --deny OP | minify`)")
        tile = f" {want.align}" if want.align else ""
        return {"kind": "violation", "signature": f"{want.constraint}{tile}: {want.op}", "op": want.op,
                "dtype": want.dtype, "constraint": want.constraint, "align": want.align,
                **({"phase": "backward"} if want.phase == "backward" else {})}
    kind = seen.get("kind")
    if kind == "error":
        return {"why": f"the original run failed before the backend did: {seen['why']}"}
    if kind is None:
        if asked not in ("auto", None):
            return {"why": f"asked for {_a(asked)} failure, but {job.model} shows none: "
                           f"{seen.get('detail') or 'it runs the same eagerly and with ' + job.backend}", "unshown": True}
        return None
    if asked not in ("auto", None) and asked != kind:
        return {"why": f"asked for {_a(asked)} failure, but {job.model} shows {kind}: {seen.get('signature', '')}",
                "unshown": True}
    # where it shows (train mode): "backward" searches the backward graphs, then the graphs run as training steps
    phase = "backward" if seen.get("phase") == "backward" else None
    if kind == "accuracy":  # the one the search ahead bets on, built in one place
        return accuracy_failure(job, precision, phase, autocast)
    # "eager": the error eager raises where the compiled run dies by the signal: part of the crash's signature
    return {"kind": kind, "signature": seen.get("signature", kind), **({"phase": phase} if phase else {}),
            **({"eager": seen["eager"]} if seen.get("eager") else {})}


def _a(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"
