"""A minimal pt2kit tool for the signal tests: one Session running one child target."""

from __future__ import annotations

import sys

from pt2kit.runtime.parent.session import Session


def main() -> None:
    target, store, pidfile = sys.argv[1:4]
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else None
    with Session("sigtool", "0", store=store) as s:
        s.header()
        res = s.run_child("m.py", f"child_targets:{target}", {"pidfile": pidfile, "n": 2}, on_record=s.writer.forward,
                          timeout=timeout)
        s.done(s.crash("m.py", res.crash) if res.crash else 0)


if __name__ == "__main__":
    main()
