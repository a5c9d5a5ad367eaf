"""python -m pt2kit.schema export DIR | check DIR: write or verify the JSON Schema file."""

from __future__ import annotations

import sys
from pathlib import Path

from .export import json_schema, schema_filename, write


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("export", "check"):
        print("usage: python -m pt2kit.schema export|check DIR", file=sys.stderr)
        return 2
    if args[0] == "export":
        print(write(args[1]))
        return 0
    path = Path(args[1]) / schema_filename()
    if not path.exists() or path.read_text() != json_schema():
        print(f"{path} is out of date: run `nox -s schemas`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
