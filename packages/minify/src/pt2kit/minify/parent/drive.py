"""minify's parent side: the model given, or each failure a stream asks for (:mod:`.targets`); for each,
its minification (:mod:`.onemodel`: the original run, the search, the repro written and verified), then
the repro written to -o and its `repro` record. Torch-free (the workers hold torch)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from pt2kit.runtime.common.backends import INDUCTOR, piped_backend, stream_backend
from pt2kit.runtime.common.errors import EXIT_OK, UsageError
from pt2kit.runtime.common.flags import usable_cpus, worker_cap
from pt2kit.runtime.common.modelfile import parse_spec
from pt2kit.runtime.common.outcome import unrunnable
from pt2kit.runtime.parent.preflight import preflight
from pt2kit.runtime.parent.session import Session, stdin_is_pipe, torch_version
from pt2kit.runtime.parent.writes import check_output, named_by, write_output

from ..job import Job
from ..narrate import Narrator
from ..records import Want, repro_fields
from .onemodel import minify_one
from .pool import Early

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
        # a bad option is exit 2 before the stream is read or any model said (what needs torch to tell, in a worker)
        preflight(s, backend=job.backend, device=job.device, config=job.config)
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
        return minify_script(s, job, got.unnamed[0], got.commands[0], graphs=len(got.models))
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
    # unshown: the targets whose graphs do not show their failure; cannot: those whose model file does not run
    # here (a custom op the script registers, say): both leave the script's own failure to reduce
    code, unshown, cannot_run = EXIT_OK, [], []
    for t, out in zip(got.targets, outs, strict=True):
        if t.model is None:
            s.warn(f"{t.where}: no model record for {t.label} on stdin (the run that wrote this wrote none): skipped")
            continue
        cannot = unrunnable(t.label, t.model.record)  # capture found its model file does not run here
        # a crash's or a missing error's own run may show the compiled side dies or returns where eager raises
        if cannot is not None and t.want.kind not in ("crash", "missing-error"):
            cannot_run.append((t.label, cannot))
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
            cannot_run.append((t.label, cannot))
    if got.unnamed and len(unshown) + len(cannot_run) == len(got.targets) > 0:  # the script's failure, no graph
        from .script import minify_script  # showing it: what none of them shows or runs, its script still does

        said = [f"do not show it when minify runs them ({', '.join(unshown)})"] if unshown else []
        said += [f"do not run here ({e})" for _, e in cannot_run]  # e names its graph
        s.say(f"{got.unnamed[0]}: the command failed, and its captured graph(s) {'; '.join(said)}: the script "
              "itself is reduced")
        return minify_script(s, job, got.unnamed[0], got.commands[0], graphs=len(got.models),
                             kept=_failed_graph(got.targets, {label for label, _ in cannot_run}))
    for label, e in cannot_run:
        code = max(code, s.refuse(e, label))
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
    from pt2kit.runtime.parent.progress import Progress
    from pt2kit.schema import Repro

    with Progress("minify", quiet=s.quiet).task(narrator.label) as task:
        o = minify_one(job, want=want, stage=task.stage, torch_version=torch_version(),
                       on_model=partial(_model_record, s), early=early,
                       on_caches=lambda line: s.say(f"{narrator.label}: {line}"),
                       on_verified=partial(_verified, s, job, narrator.label))
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


def _verified(s: Session, job: Job, label: str, text: str) -> None:
    """-o written as soon as the repro failed in a fresh run, before its bisection ends (written again then,
    its stage in its docstring); a refusal is said once, at that final write."""
    if job.output is None:
        return
    try:
        write_output(job.output, text, flag="-o")
    except (UsageError, OSError):
        return
    s.say(f"{label}: wrote {job.output}, verified; bisecting its stage")


def _kept(s: Session, text: str) -> Path:
    return s.store.path(s.store.put_text(text, "text/x-python", ".py"))


def _model_record(s: Session, fields: dict[str, Any]) -> None:
    """The `model` record of a model given on the command line, from the fields its worker sent."""
    from pt2kit.schema import SCHEMA_MAJOR, Model

    s.writer.emit(msgspec.convert({**fields, "v": SCHEMA_MAJOR, "run": s.writer.run}, Model))


def _failed_graph(targets: list[Any], cannot_run: set[str]) -> tuple[str, str, str] | None:
    """The first kept graph a crash record names as failing (its compile, or its compiled run), with its
    stage and why minify could not cut it: where the reduced script's repro says it fails."""
    from pt2kit.schema import Crash

    for t in targets:
        if isinstance(t.record, Crash) and t.record.stage:
            why = ("its model file does not run alone" if t.label in cannot_run else
                   "minify's runs of it do not show the failure")
            return t.label, t.record.stage, why
    return None
