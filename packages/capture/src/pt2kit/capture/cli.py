"""pt2kit capture [OPTIONS] -- COMMAND [ARGS...]: run your own script (python train.py, python -m pkg,
torchrun ...) unmodified, and write a `model` record for every graph torch.compile hands a backend in it.

Each record names a model file in the store (the graph as module code, each node beside your file:line,
and the inputs it was first called with), and carries the backend, mode, options, dynamic, the config
that differs from the defaults, the compile id (0/1), your function and its file:line, the rank, and the
process's structured trace (what guardscan reads). Pipe it on: `pt2kit capture -- python t.py | kdiff`.

Records go to stdout, and your command's stdout to stderr; with --out FILE the records go to FILE and
your command's stdout stays on stdout. Its stderr and files are untouched. With --values small (the
default) real values are kept for inputs up to --max-value-bytes per graph and --max-run-bytes per
run (1 GiB), the rest are drawn in the range they took; --values all keeps every input, your weights
included: the store then holds them.

Capture keeps each graph's first call. With --check nan|accuracy every call is judged in the script's
process (non-finite outputs eager does not make; or compiled vs eager by kdiff's rule), and the first
call of a graph that fails is written too, with its inputs and weights as they were then, as a record
labelled train.py[0/0@step3]: `pt2kit capture --check nan -- python t.py | kdiff | minify` minifies it.

The command runs as without capture: its fds, terminal (Ctrl-Z, /dev/tty), signals and process tree are
its own (setsid works); a bad --out (a missing folder, the script itself, a file that is not a stream, the
file stdout goes to) is refused before it runs, and records that cannot be written at the end are kept in
the store (stderr says where).

Exit: the command's own code when it failed (128+N for signal N; a crash record says how), 0 when it
succeeded, also when it compiled nothing; 2 bad usage.
"""

from __future__ import annotations

from typing import Annotated

import typer

from pt2kit.runtime.parent.options import Debug, Quiet, Store, Version, command, one_of, tool_app
from pt2kit.runtime.parent.session import Session

from . import __version__, drive
from .job import CHECKS, DEFAULT_MAX_VALUE_BYTES, VALUES, Job, parse_graphs, parse_rank

NAME = "pt2kit capture"

app = tool_app(NAME, __doc__ or "")


@command(app, name=NAME, help=__doc__)
def capture(
    cmd: Annotated[list[str] | None, typer.Argument(metavar="-- COMMAND [ARGS...]", show_default=False)] = None,
    graphs: Annotated[str, typer.Option("--graphs",
        metavar="all|first|failing|IDS", help="Which graphs to keep: all, each process's first, those whose backend "
        "raised, or a comma list of compile ids (0/1,3/0).")] = "all",
    rank: Annotated[str, typer.Option("--rank", metavar="R|all", help="Keep this torchrun rank's graphs, or all ranks'.")] = "0",
    values: Annotated[one_of(VALUES), typer.Option("--values", help="Which inputs keep their real "
        "values: small (up to --max-value-bytes in all, the rest drawn in their range), all (weights too), none."
        )] = "small",
    max_value_bytes: Annotated[int, typer.Option("--max-value-bytes", metavar="N", help="--values small's budget, in bytes.")
                               ] = DEFAULT_MAX_VALUE_BYTES,
    max_run_bytes: Annotated[int | None, typer.Option("--max-run-bytes", metavar="N", show_default=False,
        help="The most bytes of saved inputs the whole run writes (every graph, every process); past it inputs "
        "are seeded, as stderr and the model file's header say. Default: 1 GiB with --values small, no cap "
        "with --values all.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", help="Stop the command (its whole process "
                                                 "tree) after this long; a crash record says so.")] = None,
    check: Annotated[one_of(CHECKS) | None, typer.Option("--check", show_default=False,
        help="Judge every call of every compiled graph in the script's process, and keep the inputs (weights "
        "too) of each graph's first call that fails, as a model record of its own naming its step: nan "
        "(non-finite outputs where eager's are finite; cheap), accuracy (compiled vs eager by kdiff's rule; "
        "eager runs every call).")] = None,
    out: Annotated[str | None, typer.Option("--out",
        metavar="FILE", help="Write the records to FILE; the command's stdout stays on stdout.")] = None,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    with Session("capture", __version__, store=store, quiet=quiet, debug=debug, records_on_stdout=out is None) as s:
        job = Job(command=cmd or [], graphs=parse_graphs(graphs), rank=parse_rank(rank), values=values,
                  max_value_bytes=max_value_bytes, max_run_bytes=max_run_bytes, timeout=timeout, out=out,
                  check=check)
        s.done(drive.run(s, job))


def main(args: list[str] | None = None) -> None:
    app(args=args, prog_name=NAME)
