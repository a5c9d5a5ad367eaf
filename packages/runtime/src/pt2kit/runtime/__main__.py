"""pt2kit: the stream's own utility. `pt2kit cat` checks records and forwards them unchanged;
`pt2kit ls` lists the runs saved streams hold; `pt2kit gc` deletes the blobs no stream needs."""

from __future__ import annotations

from typing import Annotated

import typer

from . import __version__
from .cli import Session, printable
from .errors import UsageError
from .options import Debug, Quiet, Store, Version, command, tool_app

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
    s = Session("pt2kit", __version__, store=store, quiet=quiet, debug=debug)

    def work() -> int:
        unknown: dict[str, int] = {}
        for line in s.read(files or ["-"], want=None if validate else (), hint="e.g. `pt2kit cat run.ndjson`"):
            if not line.known:
                unknown[line.kind] = unknown.get(line.kind, 0) + 1
        if unknown:
            s.warn("kinds this version does not know, forwarded as they were: "
                   + ", ".join(f"{k} ({n})" for k, n in sorted(unknown.items())))
        return 0

    s.run(work)


@command(app, name="ls")
def ls(
    files: Annotated[list[str] | None, typer.Argument(metavar="[STREAM|DIR|-]...", show_default=False)] = None,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """One line per run in the streams: run id, tool and version, model(s), verdict (error, crash,
    fail, findings or clean) and the records by kind. Reads ./pt2kit-out without arguments."""
    s = Session("pt2kit", __version__, quiet=quiet, debug=debug)

    def work() -> int:
        from .catalog import summarize

        sources = files or ([str(s.store.root)] if s.store.root.is_dir() else ["-"])
        runs = summarize(s.expand(sources))
        for r in runs:
            print(printable(r.line()), flush=True)
        if not runs:
            s.warn("no runs in the input")
        return 0

    s.run(work)


@command(app, name="gc")
def gc(
    streams: Annotated[list[str], typer.Argument(metavar="STREAM|DIR...", show_default=False)],
    dry_run: Annotated[bool, typer.Option("--dry-run", "-n", help="Say what would go; delete nothing.")] = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Delete the store's blobs that none of the given streams references (and temporary files of
    writers that are gone). Only files of the store's blob form are touched."""
    s = Session("pt2kit", __version__, store=store, quiet=quiet, debug=debug)

    def work() -> int:
        from .catalog import plan_gc, referenced

        keep = referenced(s.expand(streams))
        if not s.store.root.is_dir():
            raise UsageError(f"{s.store.root}: no such store (give --store DIR)")
        plan = plan_gc(s.store.root, keep)
        for path in plan.delete:
            if dry_run:
                print(printable(str(path)))
            else:
                path.unlink(missing_ok=True)
        verb = "would delete" if dry_run else "deleted"
        s.say(f"{verb} {len(plan.delete)} file(s), {plan.bytes / 1e6:.1f} MB; kept {plan.keep} blob(s) "
              f"the streams reference")
        return 0

    s.run(work)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
