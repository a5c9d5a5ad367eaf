"""The Session: one invocation of a tool, and the conventions every pt2kit command keeps, in one place.

A tool's ``cli.py`` builds its frozen Job from the flags inside ``with Session(...) as s:`` and makes one
call: :meth:`Session.each_model` (a worker per model, the model given or each one piped) or its own
``drive.run(s, job)``; ``s.done(code)`` sets the exit code, and leaving the block exits with it.
Reading the models a piped stream names is :mod:`.piped`'s (``each_piped``, ``read_piped``; ``s.piped``
and ``s.piped_models`` are their tuple forms, for tools released before runtime 2.9).

* stdout carries records only; everything for humans goes to stderr (``--quiet`` silences it).
* Errors the user can fix are one line on stderr and exit 2; ``--debug`` adds the traceback.
  When the tool's header is out, an ``error`` record follows it, so the stream says why it ended.
* Ctrl-C exits 130, SIGTERM 143, each with a line on stderr and the worker stopped with it; a
  closed stdout (``tool ... | head -1``) exits 141 without a traceback. A tool started with stdout
  closed (``tool >&-``) says ``stdout is closed: the records have nowhere to go`` and exits 2 before any
  work, unless its records go elsewhere (``records_on_stdout=False``); one started with stderr closed
  works, saying nothing (:mod:`.stdio`).
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

from pt2kit.schema import BlobError, Header, Record, Store, StreamError, read_stream
from pt2kit.schema import __version__ as schema_version
from pt2kit.schema.stream import Line, RecordWriter

from ..common.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_CRASH,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Terminated,
    UsageError,
)
from ..common.text import exception_line, printable, summary_line
from .narrate import Narrator
from .stdio import stdout_closed

__all__ = ["Session", "exception_line", "printable", "summary_line", "torch_version"]

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


def stdin_is_pipe() -> bool:
    """(2.27) Whether stdin is a pipe: a tool there waits on the one upstream, time to start its workers in."""
    import stat

    try:
        return stat.S_ISFIFO(os.fstat(sys.stdin.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


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
        records_on_stdout: bool = True,
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
        self._spare: Any = None  # a worker started before its job was known (:meth:`warm`)
        # (2.31.1) False where this run's records go elsewhere (capture --out, triage's folder)
        self._records_nowhere = records_on_stdout and stdout is None and stdout_closed()

    # -- the command body: ``with Session(...) as s: s.done(work(s, job))`` ------------------
    def __enter__(self) -> Session:
        if self._records_nowhere:  # `tool >&-`: all the work would be thrown away, and exit 0 said it went well
            raise SystemExit(self._fail("stdout is closed: the records have nowhere to go", EXIT_USAGE))
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
        self._drop_spare()
        raise SystemExit(self._flushed(code))

    # -- output ----------------------------------------------------------------------------
    def say(self, msg: str) -> None:
        if not self.quiet:
            self._err(f"{self.tool}: {printable(msg, newlines=True)}")

    def warn(self, msg: str) -> None:
        if not self.quiet:
            self._err(f"{self.tool}: warning: {printable(msg, newlines=True)}")

    @staticmethod
    def _err(line: str) -> None:
        """A line on stderr; a stderr that refuses it (a hung-up terminal: EIO) does not stop the work."""
        try:
            print(line, file=sys.stderr, flush=True)
        except OSError:
            pass

    def header(self, *, torch: str | None = None, device: str | None = None,
               config: dict[str, str] | None = None, traces: list[Any] | None = None) -> Header:
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
            traces=list(traces or []),
        )
        self.header_written = True
        return rec

    def emit(self, cls: type[Record], **fields: Any) -> Any:
        return self.writer.emit_new(cls, **fields)

    def crash(self, model: str | None, fields: dict[str, Any]) -> int:
        """Record a child's crash (fields from :class:`~pt2kit.runtime.parent.child.ChildResult`), say it, exit 3."""
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
        """(spec, device, config) of each `model` record on stdin: :func:`pt2kit.runtime.parent.piped.piped_models`."""
        from .piped import piped_models

        return piped_models(self, device=device, hint=hint, config=config, stream_config=stream_config)

    def piped(
        self, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True,
        also: Sequence[type] = (),
    ) -> Iterator[tuple[Line, tuple[str, str, dict[str, str], str] | None]]:
        """Each line of stdin with, for a model record, its checked (spec, device, config, where):
        :func:`pt2kit.runtime.parent.piped.piped`."""
        from .piped import piped

        return piped(self, device=device, hint=hint, config=config, stream_config=stream_config, also=also)

    def begin(self, *, device: str | None, config: dict[str, str] | None = None) -> Header:
        """This tool's header, naming the installed torch: its part of the stream starts here."""
        return self.header(torch=torch_version(), device=device, config=config)

    def each_model(self, job: Any, *, target: str, narrator: Callable[[Callable[[str], None], str, Any], Narrator],
                   hint: str, env: dict[str, str] | None = None) -> int:
        """Run ``job`` (a :class:`~pt2kit.runtime.common.job.ModelJob`) in a worker (``target``) for the model it
        names, or, when it names none, for each `model` record on stdin with that record's model, device,
        config and label (``job.label``: what the worker's records name); each worker's records are narrated by ``narrator(say, label, job)``. Returns the
        worst exit code of them all."""
        from msgspec.structs import replace

        from .child import COMPILER
        from .piped import each_piped

        if job.model is not None:
            job = replace(job, device=job.device or "cpu")
            label = self.open_model(job.model, device=job.device)
            return self.run_model(target, job, narrator(self.say, label, job), env=env)
        code = 0
        if env is None:
            self.warm((*COMPILER, target.partition(":")[0]))
        for m in each_piped(self, device=job.device, hint=hint, config=job.config, stream_config=job.stream_config):
            one = job.for_piped(m)
            code = max(code, self.run_model(target, one, narrator(self.say, m.label, one), env=env))
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

    def open_model(self, spec: str, *, device: str) -> str:
        """Check that MODEL.py[:NAME] names a file, write the header, and return the model's label.

        A missing file is exit 2 before the header, so nothing is written for a typo.
        """
        from ..common.errors import ModelFileError
        from ..common.modelfile import label_of, parse_spec

        path, entry = parse_spec(spec)
        if not path.is_file():
            raise ModelFileError(f"{path}: no such model file")
        self.begin(device=device)
        return label_of(path, entry)

    # -- running ---------------------------------------------------------------------------
    def warm(self, preload: tuple[str, ...]) -> None:
        """(2.26) Start the first model's worker now, importing ``preload`` (torch, the tool's work module)
        at a lower priority while stdin still waits on the tool upstream: in ``capture | kdiff`` that import
        (about 6 s on a 2-core box, torch, Dynamo and Inductor) overlaps the user's script instead of
        following it. Only where stdin is a
        pipe (a file's records are all there at once) and the tool runs its workers in this process's
        environment; the next :meth:`run_child` without ``env`` takes it, and one never taken is stopped
        on exit."""
        from .child import start_worker

        if stdin_is_pipe() and self._spare is None:
            self._spare = start_worker(preload=preload)

    def _take_spare(self, env: dict[str, str] | None) -> Any:
        """The warm worker, for a job run in the environment it was started in; None otherwise."""
        spare, self._spare = (self._spare, None) if env is None else (None, self._spare)
        return spare

    def _drop_spare(self) -> None:
        from .child import stop

        if self._spare is not None:
            stop(self._spare, grace=0)
            self._spare = None

    def run_child(self, label: str, target: str, payload: Any, *, on_record: Callable[[bytes], None],
                  timeout: float | None = None, env: dict[str, str] | None = None, check: bool = False) -> Any:
        """Run a tool's work (``target``, "package.module:function") in a worker: its records go to
        ``on_record``, its stages to the progress line, its death into the returned
        :class:`~pt2kit.runtime.parent.child.ChildResult`'s ``crash`` (pass that to :meth:`crash`)."""
        from .child import run_in_child
        from .progress import Progress

        # check (3.1): a check before any model's work (parent.preflight): no progress lines, a fresh worker
        with Progress(self.tool, quiet=self.quiet or check).task(label) as task:
            return run_in_child(target, payload, run=self.writer.run, store=str(self.store.root), on_record=on_record,
                                quiet=self.quiet, env=env, timeout=timeout, on_stage=task.stage,
                                proc=None if check else self._take_spare(env))

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

    def refuse(self, e: UsageError, model: str) -> int:
        """(2.14) Say ``e`` (one model of a stream that cannot be judged) as an error line and an `error`
        record naming ``model``, without stopping: the stream's next model still runs. Exit 2."""
        return self._fail(str(e), EXIT_USAGE, e, model=model)

    def _fail(self, message: str, code: int, exc: BaseException | None = None, model: str | None = None) -> int:
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
                self.writer.emit_new(Error, message=message, exit_code=code, model=model)
            except (BrokenPipeError, OSError, ValueError):
                pass
        return code
