"""The Session: one invocation of a tool, and the conventions every pt2kit command keeps, in one place.

A tool's ``cli.py`` builds its frozen Job from the flags inside ``with Session(...) as s:`` and makes one
call: :meth:`Session.each_model` (a worker per model, the model given or each one piped) or its own
``drive.run(s, job)``; ``s.done(code)`` sets the exit code, and leaving the block exits with it.

* stdout carries records only; everything for humans goes to stderr (``--quiet`` silences it).
* Errors the user can fix are one line on stderr and exit 2; ``--debug`` adds the traceback.
  When the tool's header is out, an ``error`` record follows it, so the stream says why it ended.
* Ctrl-C exits 130, SIGTERM 143, each with a line on stderr and the worker stopped with it; a
  closed stdout (``tool ... | head -1``) exits 141 without a traceback.
* Text that came from a stream or a model reaches the terminal only through :func:`printable`:
  escape sequences and other control characters are shown, never obeyed.
* This module imports neither torch nor anything heavy: ``--help`` stays instant.

Not guaranteed: that a record written before a crash of the parent itself (an internal error) is
followed by an ``error`` record when stdout is already closed; that stderr lines are whole when several
tools share one terminal; that a worker which ignores SIGTERM dies before the grace period ends.
"""

from __future__ import annotations

import os
import platform
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pt2kit.schema import (
    BlobError,
    Header,
    Line,
    Record,
    RecordWriter,
    Store,
    StreamError,
    read_stream,
)
from pt2kit.schema import __version__ as schema_version

from .errors import (
    EXIT_BROKEN_PIPE,
    EXIT_CRASH,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Terminated,
    UsageError,
)
from .narrate import Narrator
from .text import exception_line, printable, summary_line

__all__ = ["Session", "exception_line", "printable", "summary_line", "torch_version", "upstream_end"]

def torch_version() -> str | None:
    """The installed torch's version, read from its metadata (torch is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def _terminate_like_interrupt() -> None:
    """SIGTERM unwinds like Ctrl-C (so the worker is stopped and swept), then exits 143."""
    try:
        signal.signal(signal.SIGTERM, _raise_terminated)
    except (ValueError, OSError):  # not the main thread (a test runner): leave it be
        pass


def _stdout_to_devnull() -> None:
    # Python's docs on SIGPIPE: point stdout at devnull so the interpreter's final flush is quiet.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _lazy(fn: Callable[[Any], Iterable[str]], arg: Any) -> Iterator[str]:
    yield from fn(arg)


def upstream_end(last: Line | None) -> str | None:
    """Why a stream with no model record has none, when its last line says: a tool upstream crashed or
    stopped with an error before it wrote one (``kdiff m.py | minify`` after kdiff died at load)."""
    if last is None or last.kind not in ("crash", "error"):
        return None
    import msgspec

    try:
        r = msgspec.json.decode(last.raw)
    except msgspec.DecodeError:
        return None
    where = f"{last.source}:{last.lineno}"
    if last.kind == "crash":
        why = ": ".join(str(x) for x in (r.get("exception") or r.get("signal"), r.get("message")) if x)
        return (f"{where}: the run upstream crashed during {r.get('stage') or 'its work'}"
                + (f" of {r['model']}" if r.get("model") else "") + (f" ({why})" if why else "")
                + " before writing one")
    return f"{where}: the run upstream stopped with an error before writing one ({r.get('message')})"


class Session:
    """One invocation of a tool: its writer, its store, its stderr voice and its exit code."""

    def __init__(
        self,
        tool: str,
        version: str,
        *,
        store: Path | str | None = None,
        quiet: bool = False,
        debug: bool = False,
        stdout: Any = None,
        precision: str | None = None,
    ) -> None:
        self.tool = tool
        self.version = version
        self.quiet = quiet
        self.debug = debug
        self.store = Store(store)
        self.writer = RecordWriter(stdout if stdout is not None else sys.stdout.buffer)
        self.header_written = False
        self.precision = precision  # --precision, for the header of a tool that judges accuracy
        self.exit_code = 0

    # -- the command body: ``with Session(...) as s: s.done(work(s, job))`` ------------------
    def __enter__(self) -> Session:
        _terminate_like_interrupt()
        return self

    def done(self, code: int | None) -> None:
        """The exit code the block leaves with, when nothing raises."""
        self.exit_code = int(code or 0)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        """Turn what the body raised into pt2kit's exit codes, flush stdout, and exit. Never returns."""
        if isinstance(exc, SystemExit):
            return None
        code = self.exit_code if exc is None else self._code_for(exc)
        raise SystemExit(self._flushed(code))

    # -- output ----------------------------------------------------------------------------
    def say(self, msg: str) -> None:
        if not self.quiet:
            print(f"{self.tool}: {printable(msg, newlines=True)}", file=sys.stderr, flush=True)

    def warn(self, msg: str) -> None:
        if not self.quiet:
            print(f"{self.tool}: warning: {printable(msg, newlines=True)}", file=sys.stderr, flush=True)

    def header(self, *, torch: str | None = None, device: str | None = None,
               config: dict[str, str] | None = None) -> Header:
        rec = self.writer.emit_new(
            Header,
            tool=self.tool,
            tool_version=self.version,
            argv=[self.tool, *sys.argv[1:]],
            time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            host=platform.node(),
            python=platform.python_version(),
            store=str(self.store.root),
            torch=torch,
            device=device,
            schema=schema_version,
            config=dict(config or {}),
            precision=self.precision,
        )
        self.header_written = True
        return rec

    def emit(self, cls: type[Record], **fields: Any) -> Any:
        return self.writer.emit_new(cls, **fields)

    def crash(self, model: str | None, fields: dict[str, Any]) -> int:
        """Record a child's crash (fields from :class:`~pt2kit.runtime.child.ChildResult`), say it, exit 3."""
        from pt2kit.schema import Crash

        self.emit(Crash, model=model, **fields)
        what = fields.get("signal") or fields.get("exception") or "error"
        line = f"{self.tool}: {model or 'the model'} crashed during {fields['stage']}: {what}"
        line += f": {summary_line(fields['message'])}" if fields.get("message") else ""
        if str(fields.get("message") or "").startswith("timed out"):
            line = f"{self.tool}: {model or 'the model'} {fields['message']}"
        print(printable(line), file=sys.stderr)
        return EXIT_CRASH

    # -- input -----------------------------------------------------------------------------
    def read(
        self,
        sources: Iterable[str] = ("-",),
        *,
        want: Iterable[Any] | None = None,
        forward: bool = True,
        hint: str = "",
    ) -> Iterator[Line]:
        """Records from files or stdin, forwarded to stdout as read (unless ``forward=False``)."""
        sources = list(sources) or ["-"]
        self._not_a_terminal(sources, hint)
        if forward:  # a tool that copies its input to stdout would read its own output back, without end
            from pt2kit.schema.stream import expand_sources

            from .writes import check_stdout

            check_stdout(("the stream", src) for src in _lazy(expand_sources, sources))
        return read_stream(sources, want=want, forward=self.writer.out if forward else None)

    def _not_a_terminal(self, sources: list[str], hint: str = "") -> None:
        if "-" in sources and sys.stdin.isatty():
            raise UsageError(
                f"{self.tool} reads records from a pipe, and stdin is a terminal" + (f"; {hint}" if hint else "")
            )

    def expand(self, sources: Iterable[str]) -> list[str]:
        """Files, directories of streams and ``-``, with ``-`` refused when stdin is a terminal."""
        from pt2kit.schema.stream import expand_sources

        out = expand_sources(list(sources) or ["-"])
        self._not_a_terminal(out)
        return out

    def piped_models(
        self, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True
    ) -> Iterator[tuple[str, str, dict[str, str]]]:
        """(spec, device, config) of each `model` record on stdin, which is forwarded as read.

        A stream is data (see :mod:`.trust`): each model file is checked before anything runs and
        named on stderr; the record's config is merged under ``config`` (the command line's, which
        wins) after its unsafe keys are refused, or dropped when ``stream_config`` is False. This tool's
        header comes at the first model record, with its device (``device`` or the record's), so the
        upstream lines before it are forwarded first; warns when no model came.
        """
        for _, model in self.piped(device=device, hint=hint, config=config, stream_config=stream_config):
            if model is not None:
                self.say(f"{model[3]}: running model file {model[0]} named by the stream")
                yield model[:3]

    def piped(
        self, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True,
        also: Sequence[type] = (),
    ) -> Iterator[tuple[Line, tuple[str, str, dict[str, str], str] | None]]:
        """:meth:`piped_models`'s reading, for a tool that also wants other kinds (``also``): each line
        with, for a model record, its checked (spec, device, config, where); the tool says when it
        runs one."""
        from pt2kit.schema import Model

        from .trust import check_model_file, stream_config_for, stream_settings

        lines = self.read(["-"], want=[Model, *also], hint=hint)
        models = 0
        cli = dict(config or {})
        last: Line | None = None
        for line in self._header_before_errors(lines, device, cli):
            last = line
            model = None
            if line.kind == "model" and line.record is not None:
                models += 1
                m = line.record
                where = f"{line.source}:{line.lineno}"
                if not self.header_written:  # its part starts here, so the header can name the device
                    self.header(torch=torch_version(), device=device or m.device, config=cli)
                spec = check_model_file(m.file, m.entry, where)
                settings, dropped = stream_settings(dict(m.settings or {}))
                if dropped and stream_config:
                    self.say(f"{where}: not taking {', '.join(dropped)} from the model record's settings: a stream "
                             "may not set them (the model file sets its own again when it runs)")
                cfg = stream_config_for({**settings, **(m.config or {})}, dict(config or {}), where, use=stream_config)
                if m.config and not stream_config:
                    self.say(f"{where}: ignoring the model record's config ({', '.join(sorted(m.config))}): "
                             "--no-config-from-stream")
                model = (spec, device or m.device, cfg, where)
            yield line, model
        if not models:
            self.header(torch=torch_version(), device=device, config=cli)
            ended = upstream_end(last)
            if ended:
                raise UsageError(f"no model record on stdin to work on: {ended}")
            self.warn("no model records on stdin: nothing to do")

    def _header_before_errors(self, lines: Iterator[Line], device: str | None,
                              config: dict[str, str]) -> Iterator[Line]:
        """``lines``, with this tool's header written before a bad line's error ends the stream."""
        try:
            yield from lines
        except StreamError:
            if not self.header_written:
                self.header(torch=torch_version(), device=device, config=config)
            raise

    def each_model(self, job: Any, *, target: str, narrator: Callable[[Callable[[str], None], str, Any], Narrator],
                   hint: str, env: dict[str, str] | None = None) -> int:
        """Run ``job`` (a :class:`~pt2kit.runtime.job.ModelJob`) in a worker (``target``) for the model it
        names, or, when it names none, for each `model` record on stdin with that record's model, device
        and config; each worker's records are narrated by ``narrator(say, label, job)``. Returns the
        worst exit code of them all."""
        from msgspec.structs import replace

        from .modelfile import label_of, parse_spec

        if job.model is not None:
            job = replace(job, device=job.device or "cpu")
            label = self.open_model(job.model, device=job.device)
            return self.run_model(target, job, narrator(self.say, label, job), env=env)
        code = 0
        for spec, dev, cfg in self.piped_models(device=job.device, hint=hint, config=job.config,
                                                stream_config=job.stream_config):
            one = replace(job, model=spec, device=dev, config=cfg, emit_model=False, from_stream=True)
            code = max(code, self.run_model(target, one, narrator(self.say, label_of(*parse_spec(spec)), one), env=env))
        return code

    def run_model(self, target: str, job: Any, narrator: Narrator, *, env: dict[str, str] | None = None) -> int:
        """One worker for one model: its records forwarded and narrated, its crash recorded (exit 3), else
        the narrator's verdict (:meth:`Narrator.finish`)."""

        def on_record(raw: bytes) -> None:
            self.writer.forward(raw)
            narrator.record(raw)

        res = self.run_child(narrator.label, target, job, on_record=on_record, timeout=job.timeout, env=env)
        if res.crash is not None:
            return self.crash(narrator.label, res.crash)
        return narrator.finish(res.value, res.notes)

    def for_each_model(self, model: str | None, *, device: str | None, config: dict[str, str], stream_config: bool,
                       hint: str, run: Callable[[str, str, dict[str, str], bool], int]) -> int:
        """The model given on the command line, or each `model` record on stdin: ``run(spec, device,
        config, piped)`` for each, and the worst exit code of them all."""
        if model is not None:
            self.open_model(model, device=device or "cpu")
            return run(model, device or "cpu", config, False)
        code = 0
        for spec, dev, cfg in self.piped_models(device=device, hint=hint, config=config, stream_config=stream_config):
            code = max(code, run(spec, dev, cfg, True))
        return code

    def open_model(self, spec: str, *, device: str) -> str:
        """Check that MODEL.py[:NAME] names a file, write the header, and return the model's label.

        A missing file is exit 2 before the header, so nothing is written for a typo.
        """
        from .errors import ModelFileError
        from .modelfile import label_of, parse_spec

        path, entry = parse_spec(spec)
        if not path.is_file():
            raise ModelFileError(f"{path}: no such model file")
        self.header(torch=torch_version(), device=device)
        return label_of(path, entry)

    # -- running ---------------------------------------------------------------------------
    def run_child(self, label: str, target: str, payload: Any, *, on_record: Callable[[bytes], None],
                  timeout: float | None = None, env: dict[str, str] | None = None) -> Any:
        """Run a tool's work (``target``, "package.module:function") in a worker: its records go to
        ``on_record``, its stages to the progress line, its death into the returned
        :class:`~pt2kit.runtime.child.ChildResult`'s ``crash`` (pass that to :meth:`crash`)."""
        from .child import run_in_child
        from .progress import Progress

        with Progress(self.tool, quiet=self.quiet).task(label) as task:
            return run_in_child(target, payload, run=self.writer.run, store=str(self.store.root), on_record=on_record,
                                quiet=self.quiet, env=env, timeout=timeout, on_stage=task.stage)

    def run(self, work: Callable[[], int | None]) -> None:
        """Run the command body and exit with pt2kit's exit codes. Never returns."""
        _terminate_like_interrupt()
        try:
            code = int(work() or 0)
        except Exception as e:
            code = self._code_for(e)
        except (KeyboardInterrupt, Terminated) as e:
            code = self._code_for(e)
        raise SystemExit(self._flushed(code))

    def _flushed(self, code: int) -> int:
        try:
            sys.stdout.flush()
            self.writer.out.flush()
        except BrokenPipeError:
            _stdout_to_devnull()
            code = EXIT_BROKEN_PIPE
        except (OSError, ValueError):
            pass
        return code

    def _code_for(self, e: BaseException) -> int:
        """The exit code for what a command body raised, said on stderr (and as an ``error`` record)."""
        if isinstance(e, BrokenPipeError):
            _stdout_to_devnull()
            return EXIT_BROKEN_PIPE
        if isinstance(e, Terminated):
            print(f"{self.tool}: terminated", file=sys.stderr)
            return EXIT_TERMINATED
        if isinstance(e, KeyboardInterrupt):
            print(f"{self.tool}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        if isinstance(e, UsageError | StreamError | BlobError):
            return self._fail(str(e), EXIT_USAGE, e)
        if isinstance(e, OSError):  # an output that cannot be written, a name too long: the user's to fix
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            return self._fail(f"{where}{e.strerror or e}", EXIT_USAGE, e)
        if isinstance(e, Exception):  # our own bug: say so in one line, keep the stream valid
            return self._fail(f"internal error: {type(e).__name__}: {e}", EXIT_CRASH, e)
        raise e

    def _fail(self, message: str, code: int, exc: BaseException | None = None) -> int:
        message = " ".join(message.split("\n")[:1]) or "error"
        if self.debug and exc is not None:
            traceback.print_exception(exc)
        print(
            printable(f"{self.tool}: error: {message}")
            + ("" if self.debug else "  (--debug for the traceback)" * (code != 2)),
            file=sys.stderr,
        )
        if self.header_written:
            from pt2kit.schema import Error

            try:
                self.writer.emit_new(Error, message=message, exit_code=code)
            except (BrokenPipeError, OSError, ValueError):
                pass
        return code
