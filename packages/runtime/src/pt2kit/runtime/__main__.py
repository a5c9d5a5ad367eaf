"""pt2kit: the stream's own utility. `pt2kit cat` checks records and forwards them unchanged."""

from __future__ import annotations

from typing import Annotated

import typer

from . import __version__
from .cli import Session
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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
