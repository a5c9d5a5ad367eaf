"""minify's parent side: the model given, or each failure a stream asks for (:mod:`.targets`); for each,
warm the workers, capture and reproduce the failure, search, write and verify the repro, and write its
`repro` record. Torch-free (the workers hold torch)."""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from pt2kit.runtime.backends import INDUCTOR, piped_backend, stream_backend
from pt2kit.runtime.errors import EXIT_CRASH, EXIT_FINDINGS, EXIT_OK, UsageError
from pt2kit.runtime.flags import usable_cpus, worker_cap
from pt2kit.runtime.modelfile import parse_spec
from pt2kit.runtime.outcome import unrunnable
from pt2kit.runtime.session import Session, stdin_is_pipe, torch_version
from pt2kit.runtime.writes import check_output, named_by, write_output

from . import __version__, ir, original, repro
from .ahead import Ahead, accuracy_failure, worth_it
from .beside import bisecting
from .job import Job
from .narrate import Narrator
from .pool import Early, Pool
from .records import Outcome, Want, config_strings, repro_fields
from .search import Searcher
from .verify import RUNS, verify

NOT_A_BUG = ": not a compiler bug by PyTorch's float64 rule"
# A warm worker after an Inductor compile holds about this much (each forks from one zygote, so
# torch's own pages are shared; the compile's are not)
WORKER_BYTES = 2**30


def run(s: Session, job: Job) -> int:
    """The model ``job`` names, or each failure stdin asks for: the worst exit code of them all."""
    job = replace(job, jobs=workers(s, job.jobs))
    if job.model is not None:
        job = replace(job, backend=job.backend or INDUCTOR)
    inputs = _inputs(job)
    if job.output is not None:
        check_output("-o", job.output, inputs)
    if job.model is None:
        return _piped(s, job, inputs)
    job = replace(job, device=job.device or "cpu", mode=job.mode or "infer")
    label = s.open_model(job.model, device=job.device)
    want = Want(kind="violation", constraint="deny", op=job.deny) if job.deny and job.profile is None else None
    return _one(s, job, want, Narrator(s.say, label, job))[0]


def workers(s: Session, asked: int | None) -> int:
    """--jobs: auto (None), or the number asked capped at what this machine serves (with a warning)."""
    cap, why = worker_cap(WORKER_BYTES)
    if asked is None:
        # a worker's compile already keeps two cores busy (Inductor's compile threads): on two cores one
        # worker beat two on every planted bug measured (accuracy 16-17 s vs 19, compile error 20.5 vs 23.5)
        return min(cap, max(1, min(4, usable_cpus() // 2)))
    if asked > cap:
        s.warn(f"--jobs {asked}: capped at {cap} worker(s), what this machine serves ({why})")
        return cap
    return asked


def _inputs(job: Job) -> list[tuple[str, str]]:
    """The files this run reads (``-`` for stdin), which -o may not be."""
    out = [("the model file", str(parse_spec(job.model)[0]))] if job.model is not None else [("stdin", "-")]
    if job.backend and ":" in job.backend:
        out.append(("the backend file", job.backend.rpartition(":")[0]))
    if job.profile_name and job.profile_name.endswith(".toml"):
        out.append(("the profile file", job.profile_name))
    return out


def _piped(s: Session, job: Job, inputs: list[tuple[str, str]]) -> int:
    early = Early()  # torch's import overlaps the tools upstream, or the rest of the stream
    if stdin_is_pipe():
        early.start()
    try:
        return _targets(s, job, inputs, early)
    finally:
        early.close()


def _targets(s: Session, job: Job, inputs: list[tuple[str, str]], early: Early) -> int:
    from .targets import read

    got = read(s, job, on_model=early.start)
    if not got.targets and got.graphless:  # the failure is real, but holds no graph: never "nothing to minify"
        raise UsageError(f"{got.graphless[0]} (cannot minify it: a failing export has no graph to cut; "
                         "make it export, or minify a graph of the script that compiled)")
    if not got.targets and got.unnamed:  # the command failed and no graph shows it: its script is reduced
        from .script import minify_script

        if got.refused:  # a graph no tool could judge: the script's own failure is still there to reduce
            s.say(f"{got.unnamed[0]}: the command failed, and the step before minify stopped ({got.refused[0][1]}), "
                  "so no captured graph was judged: the script itself is reduced")
        elif got.models:  # Dynamo ran the script wrong (a guard, a side effect) in code no graph holds
            s.say(f"{got.unnamed[0]}: the command failed, and none of the {len(got.models)} captured graph(s) on "
                  "stdin shows a failure: the script itself is reduced")
        return minify_script(s, job, got.unnamed[0], got.commands[0])
    if not got.targets and got.refused:  # the step before stopped: nothing was judged, never "nothing to minify"
        where, message = got.refused[0]
        raise UsageError(f"{where}: the step before minify stopped, so nothing on stdin was judged and there is "
                         f"nothing to minify yet: {message}")
    if not got.targets:
        if got.models:
            s.say("no failing diff, crash, violation or NaN/Inf kernel on stdin: nothing to minify")
        return EXIT_OK
    o, n = Path(job.output) if job.output else None, len(got.targets)
    outs = [None if o is None else str(o if n == 1 else o.with_name(f"{o.stem}-{i + 1}{o.suffix}")) for i in range(n)]
    # the files the stream names (its model files, the captured script and its arguments, a backend's file)
    # are inputs too: every -o name (repro-N.py each) is checked against them before anything runs
    inputs = inputs + [x for m in got.models.values() for x in
                       [("the model file", str(parse_spec(m.spec)[0])), *named_by(m.record)]]
    for out in outs:
        if out is not None:
            check_output("-o", out, inputs)
    code, unshown = EXIT_OK, []  # unshown: the targets whose graphs do not show their failure
    for t, out in zip(got.targets, outs, strict=True):
        if t.model is None:
            s.warn(f"{t.where}: no model record for {t.label} on stdin (the run that wrote this wrote none): skipped")
            continue
        cannot = unrunnable(t.label, t.model.record)  # capture found its model file does not run here
        # a crash's or a missing error's own run may show the compiled side dies or returns where eager raises
        if cannot is not None and t.want.kind not in ("crash", "missing-error"):
            code = max(code, s.refuse(cannot, t.label))
            continue
        mode = "train" if t.want.phase == "backward" else job.mode or ("train" if t.model.train else "infer")
        if job.mode == "infer" and mode == "train":
            s.warn(f"{t.where}: a failure of the backward (a gradient's), and --mode infer runs none: skipped")
            continue
        backend = _backend(job, t)
        s.say(f"{t.model.where}: running model file {t.model.spec} named by the stream"
              + ("" if job.backend else f" (backend {backend})"))
        # the run that found it had its own --config over the model record's (this command line's over both)
        one = job.for_piped(t.model, device=t.model.device or "cpu", config=t.config, failure=t.want.kind, deny=None,
                            output=out, ref=t.want.ref or job.ref, rule=t.want.rule or job.rule, mode=mode,
                            backend=backend)
        narrator = Narrator(s.say, t.label, one)
        narrator.minifying(t)
        try:
            got_one, shown = _one(s, one, t.want, narrator, early)
            code = max(code, got_one)
            if not shown:
                unshown.append(t.label)
        except UsageError:  # its eager run raised, and the compiled one raised too: as capture said
            if cannot is None:
                raise
            code = max(code, s.refuse(cannot, t.label))
    if unshown and len(unshown) == len(got.targets) and got.unnamed:  # the script's failure, no graph showing it
        from .script import minify_script

        s.say(f"{got.unnamed[0]}: the command failed, and its captured graph(s) do not show it when minify runs "
              f"them ({', '.join(unshown)}): the script itself is reduced")
        return minify_script(s, job, got.unnamed[0], got.commands[0])
    return code


def _backend(job: Job, t: Any) -> str:
    """--backend; else the backend the failing diff compiled with where it is not the record's own (``kdiff
    --backend aot_eager | minify``: minify's Inductor run of it would pass); else the record's (its script's)."""
    label, captured = f"{t.model.where}: {t.label}", t.model.record.captured
    tested = t.want.backend if job.backend is None else None
    if tested and tested != ((captured.backend if captured is not None else None) or INDUCTOR):
        return stream_backend(tested, label, "minify", diff=True)  # a stream never makes a tool import code
    return piped_backend(job.backend, captured, label, "minify", config=job.config)


def _one(s: Session, job: Job, want: Want | None, narrator: Narrator, early: Early | None = None) -> tuple[int, bool]:
    """One model: its repro made, written (-o, and the store) and recorded; (its exit code, whether its graphs
    show the failure: :attr:`.records.Outcome.unshown`)."""
    from pt2kit.runtime.progress import Progress
    from pt2kit.schema import Repro

    with Progress("minify", quiet=s.quiet).task(narrator.label) as task:
        o = minify_one(job, want=want, stage=task.stage, torch_version=torch_version(),
                       on_model=partial(_model_record, s), early=early)
    written, refused = None, EXIT_OK
    if o.text is not None:
        try:
            if job.output is not None:
                write_output(job.output, o.text, flag="-o")  # checked again now: a file made since is not ours
                written = job.output
        except UsageError as e:  # refused at the write: one line, and the repro stays in the store
            refused = s.refuse(UsageError(f"{e}; the repro is in the store: {_kept(s, o.text)}"), narrator.label)
        except OSError as e:  # checked before the run, gone since: the repro stays in the store, the record says where
            s.warn(f"-o {job.output}: cannot write it now ({e.strerror or e}); the repro is in the store: "
                   f"{_kept(s, o.text)}")
        narrator.on(s.emit(Repro, **repro_fields(o.fields, o.text, s.store, narrator.label, written)))
        if o.bisect is not None:
            from pt2kit.schema import Bisect

            narrator.on(s.emit(Bisect, **o.bisect, model=narrator.label))
    return max(narrator.finish(o), refused), not o.unshown


def _kept(s: Session, text: str) -> Path:
    return s.store.path(s.store.put_text(text, "text/x-python", ".py"))


def _model_record(s: Session, fields: dict[str, Any]) -> None:
    """The `model` record of a model given on the command line, from the fields its worker sent."""
    from pt2kit.schema import SCHEMA_MAJOR, Model

    s.writer.emit(msgspec.convert({**fields, "v": SCHEMA_MAJOR, "run": s.writer.run}, Model))


def minify_one(job: Job, *, want: Want | None, stage: Any, torch_version: str,
               on_model: Any = None, early: Early | None = None) -> Outcome:
    """``want``: the failure a stream record named (kind, and for a violation its constraint and op);
    ``job.jobs``: the workers, decided (:func:`workers`). The original run, the failure it shows, the
    graph that shows it alone, then its search and the repro."""
    start = time.monotonic()
    jobs = job.jobs or 1
    say = _Said(stage)
    bet = worth_it(job, want)
    pool = Pool(max(jobs, 2) if bet else jobs, timeout=job.timeout, early=early)
    got: dict[str, Any] = {}
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
        return _repro(job, found, failure, config, searchers, pool, say, torch_version, start)
    finally:
        if "early" in got:  # stopped before the original run was judged (a bad model file)
            got["early"].cancel()
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
           pool: Pool, say: _Said, torch_version: str, start: float) -> Outcome:
    """The search on the graph that shows the failure (unless the search ahead made it), then repro.py
    written and verified in fresh processes, bisected (beside, where the machine has the cores:
    :mod:`.beside`) unless --no-bisect: the model's end."""
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
                        tool_version=__version__, level=g.level, subgraph=g.subgraph, phase=g.phase, needs=s.needs)
    try:
        k, others = verify(text, pool, first=once)
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
    return made if beside is None else beside.into(made)



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
