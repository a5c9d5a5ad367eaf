"""The conventions every pt2kit command keeps, in one place.

* stdout carries records only; everything for humans goes to stderr (``--quiet`` silences it).
* Errors the user can fix are one line on stderr and exit 2; ``--debug`` adds the traceback.
  When the tool's header is out, an ``error`` record follows it, so the stream says why it ended.
* Ctrl-C exits 130; a closed stdout (``tool ... | head -1``) exits 141 without a traceback.
* This module imports neither torch nor anything heavy: ``--help`` stays instant.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import click

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
    EXIT_CODES_HELP,
    EXIT_CRASH,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UsageError,
)

# The same flags everywhere (sqlite-utils' habit): every command takes them through these decorators.
store_option = click.option(
    "--store", type=click.Path(file_okay=False, path_type=Path), envvar="PT2KIT_STORE", default=None,
    help="Blob store directory [env PT2KIT_STORE; default ./pt2kit-out].",
)
quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress or warnings on stderr.")
debug_option = click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
device_option = click.option("--device", default="cpu", show_default=True, help="Device for the model and inputs.")
config_option = click.option(
    "--config", "config", multiple=True, metavar="KEY=VALUE",
    help="Set torch._inductor.config / torch._dynamo.config (prefix inductor. or dynamo. to pick), "
    "e.g. cpp.inject_relu_bug_TESTING_ONLY=accuracy. Repeatable.",
)

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def common_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--store, --quiet, --debug."""
    return store_option(quiet_option(debug_option(f)))


def tool_command(name: str, **kw: Any) -> Callable[[Callable[..., Any]], click.Command]:
    """A click command with pt2kit's settings and the exit codes in its ``--help``."""
    return click.command(name=name, epilog=EXIT_CODES_HELP, context_settings=CONTEXT, **kw)


def summary_line(message: str) -> str:
    """One line of a many-line exception text: its first line, and the next one where the first only
    introduces it (``backend='inductor' raised:``)."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    out = lines[0]
    if out.endswith(":") and len(lines) > 1:
        out = f"{out} {lines[1]}"
    return out[:500]


def torch_version() -> str | None:
    """The installed torch's version, read from its metadata (torch is not imported)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def _stdout_to_devnull() -> None:
    # Python's docs on SIGPIPE: point stdout at devnull so the interpreter's final flush is quiet.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


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
    ) -> None:
        self.tool = tool
        self.version = version
        self.quiet = quiet
        self.debug = debug
        self.store = Store(store)
        self.writer = RecordWriter(stdout if stdout is not None else sys.stdout.buffer)
        self.header_written = False

    # -- output ----------------------------------------------------------------------------
    def say(self, msg: str) -> None:
        if not self.quiet:
            print(f"{self.tool}: {msg}", file=sys.stderr, flush=True)

    def warn(self, msg: str) -> None:
        if not self.quiet:
            print(f"{self.tool}: warning: {msg}", file=sys.stderr, flush=True)

    def header(self, *, torch: str | None = None, device: str | None = None) -> Header:
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
        print(line + (f": {summary_line(fields['message'])}" if fields.get("message") else ""), file=sys.stderr)
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
        if "-" in sources and sys.stdin.isatty():
            raise UsageError(
                f"{self.tool} reads records from a pipe, and stdin is a terminal" + (f"; {hint}" if hint else "")
            )
        return read_stream(sources, want=want, forward=self.writer.out if forward else None)

    def piped_models(self, *, device: str | None, hint: str) -> Iterator[tuple[str, str, dict[str, str]]]:
        """(spec, device, config) of each `model` record on stdin, which is forwarded as read.

        Writes this tool's header once stdin is known to be a pipe; warns when no model came.
        """
        from pt2kit.schema import Model

        lines = self.read(["-"], want=[Model], hint=hint)
        self.header(torch=torch_version(), device=device)
        models = 0
        for line in lines:
            if line.kind == "model" and line.record is not None:
                models += 1
                m = line.record
                yield (f"{m.file}:{m.entry}" if m.entry else m.file), (device or m.device), dict(m.config)
        if not models:
            self.warn("no model records on stdin: nothing to do")

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
    def run(self, work: Callable[[], int | None]) -> None:
        """Run the command body and exit with pt2kit's exit codes. Never returns."""
        code = self._run(work)
        try:
            sys.stdout.flush()
            self.writer.out.flush()
        except BrokenPipeError:
            _stdout_to_devnull()
            code = EXIT_BROKEN_PIPE
        except (OSError, ValueError):
            pass
        raise SystemExit(code)

    def _run(self, work: Callable[[], int | None]) -> int:
        try:
            return int(work() or 0)
        except BrokenPipeError:
            _stdout_to_devnull()
            return EXIT_BROKEN_PIPE
        except KeyboardInterrupt:
            print(f"{self.tool}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except (UsageError, StreamError, BlobError) as e:
            return self._fail(str(e), EXIT_USAGE)
        except Exception as e:  # our own bug: say so in one line, keep the stream valid
            return self._fail(f"internal error: {type(e).__name__}: {e}", EXIT_CRASH)

    def _fail(self, message: str, code: int) -> int:
        message = " ".join(message.split("\n")[:1]) or "error"
        if self.debug:
            traceback.print_exc()
        print(
            f"{self.tool}: error: {message}" + ("" if self.debug else "  (--debug for the traceback)" * (code != 2)),
            file=sys.stderr,
        )
        if self.header_written:
            from pt2kit.schema import Error

            try:
                self.writer.emit_new(Error, message=message, exit_code=code)
            except (BrokenPipeError, OSError, ValueError):
                pass
        return code
