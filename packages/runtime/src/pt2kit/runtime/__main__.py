"""pt2kit: the stream's own utility. `pt2kit cat` checks records and forwards them unchanged;
`pt2kit ls` lists the runs saved streams hold; `pt2kit gc` deletes the blobs no stream needs;
`pt2kit capture -- python train.py` runs your own script and writes a model record per compiled graph
(pt2kit-capture); `pt2kit triage -- python train.py` runs it through the whole pipeline into one folder
with a bug report (pt2kit-triage)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from . import __version__
from .cli.storegc import DEFAULT_PRUNE
from .common.errors import UsageError
from .parent.options import Debug, Quiet, Store, Version, command, tool_app
from .parent.session import Session, printable

app = tool_app("pt2kit", __doc__ or "", group=True)


@app.callback()
def pt2kit(version: Version = False) -> None:
    pass


@command(app, name="cat")
def cat(
    files: Annotated[list[str] | None, typer.Argument(metavar="[FILE|DIR|-]...", show_default=False)] = None,
    validate: Annotated[bool, typer.Option(
        "--validate/--envelope",
        help="Decode every known record in full, or check each line's kind, v and run only.")] = True,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Forward records unchanged, stopping with one line at the first invalid one."""
    with Session("pt2kit", __version__, store=store, quiet=quiet, debug=debug) as s:
        s.done(_cat(s, files or ["-"], validate))


def _cat(s: Session, files: list[str], validate: bool) -> int:
    unknown: dict[str, int] = {}
    for line in s.read(files, want=None if validate else (), hint="e.g. `pt2kit cat run.ndjson`"):
        if not line.known:
            unknown[line.kind] = unknown.get(line.kind, 0) + 1
    if unknown:
        s.warn("kinds this version does not know, forwarded as they were: "
               + ", ".join(f"{k} ({n})" for k, n in sorted(unknown.items())))
    return 0


@command(app, name="ls")
def ls(
    files: Annotated[list[str] | None, typer.Argument(metavar="[STREAM|DIR|-]...", show_default=False)] = None,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """One line per run in the streams: run id, tool and version, model(s), verdict (error, crash,
    fail, findings or clean) and the records by kind. Reads ./pt2kit-out without arguments."""
    with Session("pt2kit", __version__, quiet=quiet, debug=debug) as s:
        s.done(_ls(s, files or []))


def _ls(s: Session, files: list[str]) -> int:
    from .cli.catalog import summarize

    sources = files or ([str(s.store.root)] if s.store.root.is_dir() else ["-"])
    runs = summarize(s.expand(sources))
    for r in runs:
        print(printable(r.line()), flush=True)
    if not runs:
        s.warn("no runs in the input")
    return 0


@command(app, name="gc")
def gc(
    streams: Annotated[list[str], typer.Argument(metavar="STREAM|DIR...", show_default=False)],
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", "-n", help="Say what would go (stdout) and what the grace period keeps (stderr); delete nothing.")
    ] = False,
    prune: Annotated[str, typer.Option(
        "--prune", metavar="AGE",
        help="Delete only files older than AGE: now, or a count with s, m, h, d or w (30m, 12h, 2w). Younger "
             "ones may belong to a writer still running, whose records are not written yet.")] = DEFAULT_PRUNE,
    allow_no_refs: Annotated[bool, typer.Option(
        "--allow-no-refs",
        help="Go on when the streams reference no blob at all (every blob older than --prune goes); "
             "refused otherwise, since an empty stream would empty the store.")] = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Delete the store's blobs that none of the given streams references (and temporary files of
    writers that are gone), once older than --prune. Only files of the store's blob form under
    STORE/blobs are touched, never through a link; a killed capture's scratch dir goes, but one a `with
    pt2kit.capture()` block left (pt2kit.capture.recover() reads it) only once older than --prune. Exit 1
    when a file could not be deleted."""
    with Session("pt2kit", __version__, store=store, quiet=quiet, debug=debug) as s:
        s.done(_gc(s, streams, dry_run=dry_run, prune=prune, allow_no_refs=allow_no_refs))


def _gc(s: Session, streams: list[str], *, dry_run: bool, prune: str, allow_no_refs: bool) -> int:
    from .cli.storegc import (
        blobs_problem,
        needed,
        other_store_problem,
        parse_age,
        present,
        recoverable,
        referenced,
        stale_scratch,
        sweep,
    )

    grace = parse_age(prune)
    if not s.store.root.is_dir():
        raise UsageError(f"{s.store.root}: no such store (give --store DIR)")
    problem = blobs_problem(s.store.root)
    if problem:
        raise UsageError(problem)
    sources = referenced(s.expand(streams))
    problem = other_store_problem(s.store.root, sources)
    if problem:
        raise UsageError(problem)
    keep = needed(s.store.root, sources)
    if not present(s.store.root, keep) and not allow_no_refs:
        what = "reference no blob" if not keep else f"reference {len(keep)} blob(s), none of them in {s.store.root}"
        raise UsageError(f"the streams ({', '.join(streams)}) {what}: gc would delete every blob "
                         "in the store; give --allow-no-refs if that is what you want")
    plan = sweep(s.store.root, keep, grace_s=grace, dry_run=dry_run)
    stale = stale_scratch(s.store.root, grace)
    blocks = [d for d in stale if recoverable(d, grace)]  # pt2kit.capture.recover() reads them
    _sweep_scratch(s, [d for d in stale if d not in blocks], dry_run)
    for path in plan.deleted if dry_run else ():
        print(printable(str(path)), flush=True)
    for path, age in plan.young if dry_run else ():
        s.say(f"would keep {path}: unreferenced but {_age(age)} old, younger than --prune {prune}")
    for path, why in plan.failed:
        s.warn(f"cannot delete {path}: {why}")
    verb = "would delete" if dry_run else "deleted"
    line = f"{verb} {len(plan.deleted)} file(s), {plan.bytes / 1e6:.1f} MB; kept {plan.keep} blob(s) the streams " \
           f"reference and {len(plan.young)} younger than --prune {prune}"
    line += f"; skipped {len(plan.skipped)} not a blob file (a folder, a link out, a device)" if plan.skipped else ""
    line += f"; kept {len(blocks)} scratch dir(s) of a `with pt2kit.capture()` block whose process died, younger " \
            f"than --prune {prune} (pt2kit.capture.recover() writes their records; --prune now removes them)" if blocks else ""
    line += f"; {len(plan.failed)} could not be deleted" if plan.failed else ""
    s.say(line)
    return 1 if plan.failed else 0


def _sweep_scratch(s: Session, stale: list[Any], dry_run: bool) -> None:
    """The scratch dirs of `pt2kit capture` runs that were killed (their records were never written)."""
    import shutil

    for d in stale:
        if not dry_run:
            shutil.rmtree(d, ignore_errors=True)
        s.say(f"{'would remove' if dry_run else 'removed'} {d}: the scratch dir of a pt2kit capture that is gone")


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


# `pt2kit NAME` commands that live in a package of their own, found through its console script
DELEGATED = {"capture": "pt2kit-capture", "triage": "pt2kit-triage"}


@app.command(name="capture", add_help_option=False,
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def capture(ctx: typer.Context) -> None:
    """Run your own script (python train.py, torchrun ...) unmodified and write a model record for every
    graph torch.compile compiles in it: `pt2kit capture -- python train.py | kdiff` (pt2kit-capture)."""
    _delegate("capture", ctx.args)


@app.command(name="triage", add_help_option=False,
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def triage(ctx: typer.Context) -> None:
    """From a failing script to a bug report: `pt2kit triage -- python train.py` runs it under capture and
    its records through guardscan, kdiff, minify and reportgen into one folder (pt2kit-triage)."""
    _delegate("triage", ctx.args)


def _delegate(name: str, args: list[str]) -> None:
    """Hand the command line to the package's own command, found through its console script's entry point
    (a tool is never imported by name from here: the layers go schema <- runtime <- tools)."""
    from importlib.metadata import entry_points

    found = entry_points(group="console_scripts", name=DELEGATED[name])
    if not found:
        print(f"pt2kit: error: pt2kit {name} needs {DELEGATED[name]}: pip install {DELEGATED[name]}", file=sys.stderr)
        raise SystemExit(2)
    sys.argv = [sys.argv[0], *args]  # what the header's argv records
    next(iter(found)).load()(args)


def main() -> None:
    # `pt2kit capture ...` and `pt2kit triage ...` go straight through: the group's parser would eat the `--`
    # before COMMAND
    if sys.argv[1:2] and sys.argv[1] in DELEGATED:
        return _delegate(sys.argv[1], sys.argv[2:])
    app()


if __name__ == "__main__":
    main()
