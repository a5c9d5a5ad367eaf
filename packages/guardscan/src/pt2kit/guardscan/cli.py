"""guardscan [MODEL.py[:NAME]] | --trace DIR: graph breaks, guards and recompilations of torch.compile,
with the user's lines and what to change.

Compiles the model, calls it with its example inputs, then with variants that provoke recompiles:
by default dim 0 of every tensor input doubled, then halved; --vary adds more. Writes a `graph` per
compiled frame, a `graph_break` per break (reason, call, file:line, torch's GB id), every `guard`
of every compile, a `recompile` per recompile (the failing guard, its line, the input change; the
one recompile automatic dynamic shapes make per dimension is marked expected), a `variant` per call
(reused a graph or recompiled) and `advice` with the concrete change.

--trace DIR reads a TORCH_TRACE directory (what tlparse reads) instead of running anything.
Without MODEL or --trace, diffs each `model` record on stdin (`fxcheck m.py | guardscan`).
Exit 0 nothing found, 1 graph breaks or unexpected recompiles, 2 bad input, 3 a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pt2kit.runtime.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from pt2kit.runtime.flags import check_seconds
from pt2kit.runtime.options import (
    Config,
    Debug,
    DeviceFromRecord,
    NoStreamConfig,
    Quiet,
    Store,
    Timeout,
    Version,
    command,
    tool_app,
)
from pt2kit.runtime.session import Session, torch_version

from . import __version__

app = tool_app("guardscan", __doc__ or "")


@command(app)
def guardscan(
    model: Annotated[str | None, typer.Argument(metavar="[MODEL.py[:NAME]]", show_default=False)] = None,
    trace_dir: Annotated[Path | None, typer.Option(
        "--trace", metavar="DIR", show_default=False,
        help="Read a TORCH_TRACE directory (or one of its logs) instead of running a model.")] = None,
    vary: Annotated[list[str] | None, typer.Option(
        "--vary", metavar="SPEC", show_default=False,
        help="Also call with changed inputs: [INPUT:]KEY=VALUE[,...], KEY a dim number, dtype, device or "
        "requires_grad; e.g. 0=16, x:1=32, dtype=float16. Repeatable.")] = None,
    default_vary: Annotated[bool, typer.Option(
        help="Call with dim 0 of every tensor input doubled, then halved.")] = True,
    dynamic: Annotated[bool | None, typer.Option(
        "--dynamic/--no-dynamic", show_default=False,
        help="torch.compile(dynamic=True/False) [default: automatic dynamic shapes].")] = None,
    recompile_limit: Annotated[int | None, typer.Option(
        min=1, metavar="N", show_default=False,
        help="torch._dynamo.config.recompile_limit for the run [default: torch's, 8].")] = None,
    backend: Annotated[str, typer.Option(
        help="torch.compile backend (eager, aot_eager, inductor): breaks and guards are Dynamo's, "
        "so eager is the fastest way to see them.")] = "eager",
    device: DeviceFromRecord = None,
    timeout: Timeout = None,
    config: Config = None,
    no_stream_config: NoStreamConfig = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    s = Session("guardscan", __version__, store=store, quiet=quiet, debug=debug)
    opts = {"vary": list(vary or ()), "default_vary": default_vary, "dynamic": dynamic,
            "recompile_limit": recompile_limit, "backend": backend}
    s.run(lambda: _work(s, model, trace_dir, opts, device, list(config or ()), timeout, not no_stream_config))


def _work(s: Session, model: str | None, trace_dir: Path | None, opts: dict[str, Any], device: str | None,
          config: list[str], timeout: float | None, stream_config: bool) -> int:
    from pt2kit.runtime.config import parse_config

    from .variants import parse_vary

    check_seconds("--timeout", timeout)
    cfg = parse_config(config)
    for v in opts["vary"]:
        parse_vary(v)  # bad specs are exit 2 before anything loads
    if trace_dir is not None:
        if model is not None:
            raise UsageError("give a MODEL.py or --trace DIR, not both")
        return _trace(s, trace_dir)
    hint = "give a MODEL.py, --trace DIR, or pipe records: `fxcheck m.py | guardscan`"
    return s.for_each_model(model, device=device, config=cfg, stream_config=stream_config, hint=hint,
                            run=lambda spec, dev, c, piped: _scan_one(s, spec, dev, c, opts, timeout,
                                                                      emit_model=not piped))


def _verdict(counts: dict[str, int]) -> int:
    return EXIT_FINDINGS if counts["breaks"] or counts["unexpected"] or counts.get("limit_hits") else EXIT_OK


def _scan_one(s: Session, spec: str, device: str, cfg: dict[str, str], opts: dict[str, Any],
              timeout: float | None, *, emit_model: bool) -> int:
    from pt2kit.runtime.modelfile import label_of, parse_spec

    from .narrate import Narrator

    label = label_of(*parse_spec(spec))
    narrator = Narrator(s.say, label)

    def on_record(raw: bytes) -> None:
        s.writer.forward(raw)
        narrator.record(raw)

    from .job import Job

    job = Job(model=spec, device=device, config=cfg, emit_model=emit_model, from_stream=not emit_model, **opts)
    res = s.run_child(label, "pt2kit.guardscan.work:run", job, on_record=on_record, timeout=timeout)
    if res.crash is not None:
        return s.crash(label, res.crash)
    narrator.summary(res.value)
    return _verdict(res.value)


def _trace(s: Session, trace_dir: Path) -> int:
    from .analyze import analyze
    from .narrate import Narrator
    from .records import emit_findings
    from .tracelog import read_trace

    try:
        traces = read_trace(trace_dir)
    except (FileNotFoundError, OSError) as e:
        raise UsageError(str(e).splitlines()[0]) from None
    s.header(torch=torch_version())
    code = EXIT_OK
    for path, trace in traces:
        label = path.name
        narrator = Narrator(s.say, label)

        def emit(cls: Any, narrator: Narrator = narrator, **fields: Any) -> Any:
            rec = s.emit(cls, **fields)
            from pt2kit.schema import encode

            narrator.record(encode(rec))
            return rec

        findings = analyze(trace)
        counts = emit_findings(findings, emit, s.store, model=label)
        counts["limit_hits"] = len(findings.limit_hits)
        if not trace.events:
            s.warn(f"{path}: no structured trace events in it")
        narrator.summary(counts)
        code = max(code, _verdict(counts))
    return code


def main() -> None:
    app()
