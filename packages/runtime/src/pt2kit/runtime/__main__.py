"""pt2kit: the stream's own utility. `pt2kit cat` checks records and forwards them unchanged."""

from __future__ import annotations

import click

from . import __version__
from .cli import CONTEXT, EXIT_CODES_HELP, Session, common_options, tool_command


@click.group(name="pt2kit", help=__doc__, epilog=EXIT_CODES_HELP, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="pt2kit-runtime")
def app() -> None:
    pass


@app.add_command
@tool_command("cat")
@click.argument("files", nargs=-1, metavar="[FILE|DIR|-]...")
@click.option("--validate/--envelope", default=True, show_default=True,
              help="Decode every known record in full, or check each line's kind, v and run only.")
@common_options
def cat(files: tuple[str, ...], validate: bool, store: object, quiet: bool, debug: bool) -> None:
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
