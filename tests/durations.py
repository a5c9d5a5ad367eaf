"""Write tests/durations.txt, each test file's longest work unit in seconds, from pytest's ``--durations=0`` output:
``python tests/durations.py LOG=ROOTDIR ...`` (ROOTDIR: the folder that run's node ids are relative to,
e.g. ``packages/minify`` for a package's session, ``.`` for e2e). Files a log names are replaced; the rest
of the table is kept. The noxfile starts the slowest files first (tests/nox_support.py's ``slowest_first``), so the
figures only need to rank files. A work unit is what one xdist worker runs at once: the tests of one
``xdist_group`` (their ``@name`` suffix) together, or one test. A file is ranked by its longest unit, not its sum:
the run ends when its last long unit does, and a file of many short tests fills the gaps wherever it starts."""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

from nox_support import DURATIONS as TABLE
from nox_support import ROOT
from nox_support import read_durations as read_table

LINE = re.compile(r"^([0-9.]+)s (?:call|setup|teardown)\s+([^:\s]+)::([^\s\[@]+)(\S*)")
HEADER = ("# each test file's longest work unit (an xdist group, or a test) in seconds, written by tests/durations.py from "
          "--durations=0 logs: the noxfile runs the slowest first\n")


def main(args: list[str]) -> int:
    if not args or any("=" not in a for a in args):
        print("usage: python tests/durations.py LOG=ROOTDIR ...", file=sys.stderr)
        return 2
    table = read_table()
    for arg in args:
        log, _, rootdir = arg.partition("=")
        units: dict[tuple[str, str], float] = defaultdict(float)
        for line in Path(log).read_text(errors="replace").splitlines():
            if m := LINE.match(line):
                rel = (ROOT / rootdir / m[2]).resolve().relative_to(ROOT).as_posix()
                group = m[4].rpartition("@")[2] if "@" in m[4] else None
                units[rel, f"@{group}" if group else m[3] + m[4]] += float(m[1])
        longest: dict[str, float] = defaultdict(float)
        for (rel, _), seconds in units.items():
            longest[rel] = max(longest[rel], seconds)
        table.update(longest)
    TABLE.write_text(HEADER + "".join(f"{s:.1f} {rel}\n" for rel, s in sorted(table.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
