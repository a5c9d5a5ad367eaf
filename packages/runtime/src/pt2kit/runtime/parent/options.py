"""The command-line skeleton every pt2kit command shares: typer apps, the common options defined
once as ``Annotated`` aliases, ``--version`` from the package's own version, and one-line errors.

Guarantees:

* Every command is ``tool_app(...)`` plus one function whose parameters use these aliases, so
  ``--store``, ``--quiet``, ``--debug``, ``--device``, ``--config``, ``--timeout``,
  ``--no-config-from-stream``, ``--precision`` and ``--version`` read and behave the same in every tool.
* A usage error (unknown option, bad value, missing argument) is one line on stderr,
  ``tool: error: ... (see tool --help)``, and exit 2, like every other error; typer's boxes and
  click's three-line usage text are not shown.
* Help is plain text (rich markup off: our help texts hold ``[MODEL.py[:NAME]]`` brackets), ends
  with the exit-code table, and importing this module imports neither torch nor rich.
* The same on every typer the packages accept (click's exceptions and choices are taken from the click
  typer parses with: its own copy since typer 0.26, which no longer installs click), and every option
  names its flag, since typer
  0.27 makes ``--BACKEND`` of an option that gives a metavar and no name. Tools take :func:`one_of`
  from here, as an option's annotation (``Annotated[one_of(("a", "b")), typer.Option("--x")]``).
* Shell completion is available (``--install-completion``, ``--show-completion``), never
  installed unasked.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from typer.core import TyperCommand, TyperGroup

from ..common.errors import EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_USAGE
from .stdio import hold_closed_stdio

# typer 0.26 and later parse with a copy of click of their own (and no longer install click; before 0.26
# typer requires click, so the fallback's import is typer's declared dependency): its exceptions are the ones
# raised. Private names, kept here alone.
try:
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
except ImportError:
    from click.exceptions import ClickException, NoArgsIsHelpError


def one_of(values: Any) -> Any:
    """The annotation of an option that takes one of ``values``: a ``Literal``, which typer reads as a choice
    since 0.19 (``click_type=`` is gone from typer 0.29's Option)."""
    return Literal[tuple(values)]


def choice(values: Any) -> Any:
    """``click_type=`` for an option taking one of ``values``: the tools before runtime 2.31 pass it (their
    range accepts this runtime), on the typers before 0.29 that take a click type."""
    try:
        from typer._types import TyperChoice
    except ImportError:
        from click import Choice as TyperChoice  # typer before 0.26 requires click
    return TyperChoice(list(values))


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _one_line(name: str, run: Any) -> Any:
    from ..common.text import printable

    hold_closed_stdio()
    try:
        return run()
    except NoArgsIsHelpError as e:
        typer.echo(e.ctx.get_help() if e.ctx else str(e), err=True)
        raise SystemExit(EXIT_USAGE) from None
    except ClickException as e:
        # typer 0.29 words a bad choice through pydantic-style "Value error, ": the same line on every typer
        said = e.format_message().replace(": Value error, ", ": ")
        print(printable(f"{name}: error: {said}  (see {name} --help)"), file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    except (typer.Abort, KeyboardInterrupt):
        print(f"{name}: interrupted", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None


class Command(TyperCommand):
    """A typer command whose usage errors are one line and exit 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        return _one_line(self.name or "pt2kit", lambda: super(Command, self).main(*args, **kwargs))


class Group(TyperGroup):
    """The same for a command with subcommands (``pt2kit cat``, ``pt2kit ls``)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        return _one_line(self.name or "pt2kit", lambda: super(Group, self).main(*args, **kwargs))


def tool_app(name: str, help: str, *, group: bool = False) -> typer.Typer:
    """A typer app with pt2kit's settings; decorate its one command with :func:`command`."""
    return typer.Typer(
        name=name, help=help, epilog=EXIT_CODES_HELP, context_settings=CONTEXT, rich_markup_mode=None,
        pretty_exceptions_enable=False, add_completion=True, cls=Group if group else None,
        no_args_is_help=False,
    )


def command(app: typer.Typer, name: str | None = None, help: str | None = None) -> Any:
    """``@command(app)``: register the tool's function with the one-line-error command class (its help
    defaults to the app's, the tool module's docstring; a subcommand's (``name`` given) to its own)."""
    if help is None and name is None and isinstance(app.info.help, str):
        help = app.info.help
    return app.command(name=name, help=help, cls=Command, epilog=EXIT_CODES_HELP, context_settings=CONTEXT)


def _version(ctx: Any, param: Any, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib import import_module

    root = ctx.find_root()
    tool = root.command.name or "pt2kit"
    # the package whose command this is: pt2kit.kdiff.cli -> pt2kit.kdiff (works installed or not)
    callback = root.command.callback
    module = ".".join((getattr(callback, "__module__", None) or "pt2kit.runtime").split(".")[:2])
    try:
        version = import_module(module).__version__
    except (ImportError, AttributeError):
        version = "unknown"
    typer.echo(f"{tool} {version}")
    ctx.exit(0)


# The shared options, defined once (sqlite-utils' habit, typer's way).
Store = Annotated[Path | None, typer.Option(
    "--store", envvar="PT2KIT_STORE", file_okay=False, show_envvar=False,
    help="Blob store directory [env PT2KIT_STORE; default ./pt2kit-out].")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or warnings on stderr.")]
Debug = Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")]
Version = Annotated[bool, typer.Option(
    "--version", callback=_version, is_eager=True, expose_value=False, help="Show the version and exit.")]
Device = Annotated[str, typer.Option("--device", help="Device for the model and inputs.")]
DeviceFromRecord = Annotated[str | None, typer.Option(
    "--device", help="Device [default: the model record's, else cpu].")]
Config = Annotated[list[str] | None, typer.Option(
    "--config", metavar="KEY=VALUE",
    help="Set torch._inductor.config / torch._dynamo.config (prefix inductor. or dynamo. to pick), "
    "e.g. cpp.inject_relu_bug_TESTING_ONLY=accuracy. Repeatable.")]
Timeout = Annotated[float | None, typer.Option(
    "--timeout", metavar="SECONDS",
    help="Give up on a model after this long: its worker is stopped and a crash record says so.")]
NoStreamConfig = Annotated[bool, typer.Option(
    "--no-config-from-stream", help="Ignore the config that piped `model` records carry; only --config settings apply.")]
PRECISIONS = ("harness", "as-configured")
Precision = Annotated[one_of(PRECISIONS), typer.Option(
    "--precision", help="The float32 settings accuracy is judged under. harness: PyTorch's accuracy harness's (TF32 off for "
    "matmul and cuDNN, deterministic cuDNN, no cuDNN benchmark, CUBLAS_WORKSPACE_CONFIG=:4096:8, Inductor's "
    "fallback_random), in the reference and the compiled run; as-configured: the model's own, with the modes "
    "each side ran with reported.")]
