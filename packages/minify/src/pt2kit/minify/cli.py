"""minify [MODEL.py[:NAME]]: the smallest standalone repro.py of a torch.compile failure.

Decides once, from the original run, what "still fails" means (an exception's type and normalised
message, the signal that killed the process, an accuracy failure by kdiff's float64-aware verdict,
NaN/Inf in the compiled output, a constraint and op), then shrinks the forward aten graph (accuracy:
from kdiff's first diverging op; else truncation, prefix cut and delta debugging), the input
shapes and the --config set, judging every candidate by that signature in warm worker processes
(--jobs in parallel; one that dies is replaced, and its death is a signature like any other).
The repro runs with torch alone, exits 1 while the bug is present and 0 once it is fixed; minify
runs it 3 times in fresh processes and writes a `repro` record (the file in the store, and -o).

Without MODEL, reads records on stdin, forwards every line, and minifies each model's first failure
of each kind: a failing `diff`, a `crash`, a `violation`, a `kernel` with a NaN/Inf finding
(`kdiff m.py | minify`, `fxcheck m.py --deny aten.convolution | minify`).
Exit 1 a repro was made and reproduces, 0 no failure to minify, 2 bad input, 3 the failure could not
be re-created or reduced (the message says why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import click
import typer

from pt2kit.runtime.errors import EXIT_OK, UsageError
from pt2kit.runtime.flags import check_range, check_seconds, check_seed, usable_cpus, worker_cap
from pt2kit.runtime.options import (
    Config,
    Debug,
    DeviceFromRecord,
    NoStreamConfig,
    Precision,
    Quiet,
    Store,
    Timeout,
    Version,
    command,
    tool_app,
)
from pt2kit.runtime.session import Session, torch_version
from pt2kit.runtime.writes import check_output, write_output

from . import __version__

FAILURES = ("auto", "compile-error", "crash", "accuracy", "nan", "violation")

app = tool_app("minify", __doc__ or "")


@command(app)
def minify(
    model: Annotated[str | None, typer.Argument(metavar="[MODEL.py[:NAME]]", show_default=False)] = None,
    failure: Annotated[str, typer.Option(click_type=click.Choice(FAILURES),
                                         help="The failure to keep; auto takes what the original run shows.")] = "auto",
    backend: Annotated[str, typer.Option(metavar="BACKEND",
                                         help="inductor, aot_eager, aoti (export, package, load, run) or FILE.py:NAME."
                                         )] = "inductor",
    ref: Annotated[str, typer.Option(click_type=click.Choice(("eager", "eager64")),
                                     help="Accuracy: the reference the compiled output is held against (eager64: a "
                                     "float64 run; a stream's diff brings its own).")] = "eager",
    deny: Annotated[str | None, typer.Option(metavar="OP", help="Keep a violation: the aten op (aten.convolution) "
                                             "must stay in the graph.", show_default=False)] = None,
    profile: Annotated[str | None, typer.Option(
        metavar="NAME|FILE.toml", show_default=False,
        help="Keep the first violation fxcheck's checks find under this capability profile.")] = None,
    align: Annotated[int | None, typer.Option(metavar="N", show_default=False,
                                              help="fxcheck's --align: keep an op whose output is no multiple of N.")
                     ] = None,
    dtypes: Annotated[str | None, typer.Option(metavar="D1,D2", show_default=False,
                                               help="fxcheck's --dtypes: keep an op of a dtype not allowed.")] = None,
    check_str: Annotated[str | None, typer.Option(help="An error counts only if its message holds TEXT.",
                                                  metavar="TEXT", show_default=False)] = None,
    jobs: Annotated[str, typer.Option("--jobs", "-j", metavar="N|auto", help="Worker processes judging candidates in "
                                      "parallel; auto: half the CPUs, at most 4. Never more than the CPUs and "
                                      "memory serve (capped, with a warning).")] = "auto",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Also write the repro here (never over an "
                                                "input: the model, the stream, a backend or profile file).",
                                                show_default=False)] = None,
    seed: Annotated[int, typer.Option(help="Seed of the model's run and of the repro's inputs (-2**63 to "
                                      "2**64-1, torch's range).")] = 0,
    precision: Precision = "harness",
    device: DeviceFromRecord = None,
    timeout: Timeout = None,
    config: Config = None,
    no_stream_config: NoStreamConfig = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    s = Session("minify", __version__, store=store, quiet=quiet, debug=debug)
    s.precision = precision
    opts = {"failure": failure, "backend": backend, "seed": seed, "ref": ref, "precision": precision}
    rules = {"profile": profile, "align": align, "dtypes": dtypes}
    s.run(lambda: _work(s, model, opts, deny, check_str, jobs, output, device, list(config or ()), timeout,
                        not no_stream_config, rules))


def _work(s: Session, model: str | None, opts: dict[str, Any], deny: str | None, check_str: str | None,
          jobs_arg: str, output: Path | None, device: str | None, config: list[str], timeout: float | None,
          stream_config: bool, rules: dict[str, Any]) -> int:
    from pt2kit.runtime.config import parse_config

    check_seconds("--timeout", timeout)
    check_seed("--seed", opts["seed"])
    check_range("--align", rules["align"], 1)
    jobs = _jobs(s, jobs_arg)
    inputs = _inputs(model, opts["backend"], rules["profile"])
    if output is not None:
        check_output("-o", output, inputs)
    if deny and opts["failure"] not in ("auto", "violation"):
        raise UsageError(f"--deny with --failure {opts['failure']}: --deny keeps a violation")
    if any(v is not None for v in rules.values()):
        if opts["failure"] not in ("auto", "violation"):
            raise UsageError(f"--profile, --align or --dtypes with --failure {opts['failure']}: they keep a violation")
        opts = dict(opts, profile=_profile(rules, deny), failure="violation")
        if model is None:
            raise UsageError("--profile, --align and --dtypes check a MODEL; for a stream, pipe fxcheck's violations "
                             "(`fxcheck m.py --align 16 | minify`)")
        deny = None
    be = opts["backend"]
    if be not in ("inductor", "aot_eager", "aoti") and not (":" in be and be.rpartition(":")[0].endswith(".py")):
        raise UsageError(f"--backend {be}: expected inductor, aot_eager, aoti or FILE.py:NAME")
    if ":" in be and not Path(be.rpartition(":")[0]).is_file():
        raise UsageError(f"--backend {be}: no such file {be.rpartition(':')[0]}")
    cfg = parse_config(config)
    want = {"kind": "violation", "constraint": "deny", "op": deny} if deny else None
    if model is not None:
        s.open_model(model, device=device or "cpu")
        return _one(s, model, device or "cpu", cfg, opts, want, check_str, jobs, output, timeout, piped=False)
    return _stream(s, opts, check_str, jobs, output, device, cfg, timeout, stream_config, inputs)


# A warm worker after an Inductor compile holds about this much (each forks from one zygote, so
# torch's own pages are shared; the compile's are not)
WORKER_BYTES = 2**30


def _jobs(s: Session, text: str) -> int:
    """--jobs: auto, or N >= 1 capped at what this machine serves (with a warning)."""
    cap, why = worker_cap(WORKER_BYTES)
    if text == "auto":
        # a worker's compile already keeps two cores busy (Inductor's compile threads): on two cores one
        # worker beat two on every planted bug measured (accuracy 16-17 s vs 19, compile error 20.5 vs 23.5)
        return min(cap, max(1, min(4, usable_cpus() // 2)))
    try:
        n = int(text)
    except ValueError:
        raise UsageError(f"--jobs {text}: expected a number of workers >= 1, or auto") from None
    check_range("--jobs", n, 1, what="a number of workers (or auto)")
    if n > cap:
        s.warn(f"--jobs {n}: capped at {cap} worker(s), what this machine serves ({why})")
        return cap
    return n


def _inputs(model: str | None, backend: str, profile: str | None) -> list[tuple[str, str]]:
    """The files this run reads (``-`` for stdin), which -o may not be."""
    from pt2kit.runtime.modelfile import parse_spec

    out = [("the model file", str(parse_spec(model)[0]))] if model is not None else [("stdin", "-")]
    if ":" in backend:
        out.append(("the backend file", backend.rpartition(":")[0]))
    if profile and profile.endswith(".toml"):
        out.append(("the profile file", profile))
    return out


def _profile(rules: dict[str, Any], deny: str | None) -> Any:
    """fxcheck's profile from minify's flags (its environment's PT2KIT_PROFILE is not read: minify keeps
    a violation only when asked on its command line)."""
    from pt2kit.fxcheck import parse_dtypes, resolve_profile

    flags = {"align": rules["align"], "deny": [deny] if deny else None,
             "dtypes": parse_dtypes(rules["dtypes"], "--dtypes") if rules["dtypes"] else None}
    return resolve_profile(rules["profile"], flags, environ={})


def _stream(s: Session, opts: dict[str, Any], check_str: str | None, jobs: int, output: Path | None,
            device: str | None, cfg: dict[str, str], timeout: float | None, stream_config: bool,
            inputs: list[tuple[str, str]]) -> int:
    from pt2kit.runtime.modelfile import parse_spec
    from pt2kit.runtime.trust import stream_config_for
    from pt2kit.schema import Crash, Diff, Header, Kernel, Violation

    from . import narrate
    from .records import unkept, wanted

    hint = "give a MODEL.py, or pipe records: `kdiff m.py | minify`"
    models: dict[str, tuple[str, str, dict[str, str], str]] = {}
    asks: list[tuple[str, dict[str, Any], str, dict[str, str]]] = []
    told: set[str] = set()
    runs: dict[str, tuple[dict[str, str], str]] = {}  # each upstream run's --config: its findings were seen so
    for line, model in s.piped(device=device, hint=hint, config=cfg, stream_config=stream_config,
                               also=[Header, Diff, Crash, Violation, Kernel]):
        if model is not None:
            models[line.record.model] = model  # type: ignore[union-attr]
        elif isinstance(line.record, Header):
            runs[line.record.run] = (dict(line.record.config), f"{line.source}:{line.lineno}")
        elif line.record is not None:
            why = unkept(line.record)
            if why and why not in told:
                told.add(why)
                s.say(f"{line.source}:{line.lineno}: {why}")
            w = wanted(line.record)
            label = getattr(line.record, "model", None)
            if w and label and not any(a[0] == label and a[1]["kind"] == w["kind"] for a in asks):
                run_cfg, run_where = runs.get(line.record.run, ({}, ""))
                asks.append((label, w, f"{line.source}:{line.lineno}", stream_config_for(
                    run_cfg, cfg, run_where, use=stream_config, what=f"the header of the run that wrote this {line.kind}")))
    if not asks:
        if models:
            s.say("no failing diff, crash, violation or NaN/Inf kernel on stdin: nothing to minify")
        return EXIT_OK
    outs = [output if output is None or len(asks) == 1 else output.with_name(f"{output.stem}-{n + 1}{output.suffix}")
            for n in range(len(asks))]
    # the stream's model files are inputs too: every -o name is checked against them before anything runs
    inputs = inputs + [("the model file", str(parse_spec(m[0])[0])) for m in models.values()]
    for out in outs:
        if out is not None:
            check_output("-o", out, inputs)
    code = EXIT_OK
    for (label, w, where, seen), out in zip(asks, outs, strict=True):
        if label not in models:
            s.warn(f"{where}: no model record for {label} on stdin (the run that wrote this wrote none): skipped")
            continue
        spec, dev, c, mwhere = models[label]
        s.say(f"{mwhere}: running model file {spec} named by the stream")
        narrate.failure(s.say, label, where, w)
        o = dict(opts, failure=w["kind"], **{k: w[k] for k in ("ref", "rule") if k in w})
        # the run that found it had its own --config over the model record's (``seen``, this command
        # line's over both)
        code = max(code, _one(s, spec, dev or "cpu", {**c, **seen}, o, w, check_str, jobs, out, timeout, piped=True))
    return code


def _one(s: Session, spec: str, device: str, cfg: dict[str, str], opts: dict[str, Any], want: dict[str, Any] | None,
         check_str: str | None, jobs: int, output: Path | None, timeout: float | None, *, piped: bool) -> int:
    import msgspec

    from pt2kit.runtime.modelfile import label_of, parse_spec
    from pt2kit.runtime.progress import Progress
    from pt2kit.schema import SCHEMA_MAJOR, Model, Repro

    from . import narrate
    from .drive import minify_one
    from .job import Job
    from .records import repro_fields

    label = label_of(*parse_spec(spec))
    job = Job(model=spec, device=device, config=cfg, emit_model=not piped, from_stream=piped, **opts)
    with Progress("minify", quiet=s.quiet).task(label) as task:
        o = minify_one(job, want=want, jobs=jobs, timeout=timeout, stage=task.stage, torch_version=torch_version(),
                       check_str=check_str, on_model=lambda f: s.writer.emit(
                           msgspec.convert({**f, "v": SCHEMA_MAJOR, "run": s.writer.run}, Model)))
    written = None
    if o.text is not None:
        try:
            if output is not None:
                write_output(output, o.text)
                written = str(output)
        except OSError as e:  # checked before the run, gone since: the repro stays in the store, the record says where
            s.warn(f"-o {output}: cannot write it now ({e.strerror or e}); the repro is in the store: "
                   f"{s.store.path(s.store.put_text(o.text, 'text/x-python', '.py'))}")
        s.emit(Repro, **repro_fields(o.fields, o.text, s.store, label, written))
    narrate.outcome(s.say, label, o.message, o.fields, written)
    return o.code


def main() -> None:
    app()
