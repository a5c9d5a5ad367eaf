"""What triage says on stderr: each step's number, name and exact command before it runs (the tools' own
progress follows, theirs: a live rich line on a terminal, a plain line a stage otherwise), how it ended,
and at the end the folder and what lies in it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .steps import Step, rel

# what each exit code of a pt2kit tool means (README's table); capture's is the script's own
MEANING = {0: "clean", 1: "findings", 2: "bad input", 3: "a crash", 130: "interrupted", 143: "terminated"}


class Narrator:
    def __init__(self, say: Callable[[str], None], cwd: Path, out: Path) -> None:
        self.say = say
        self.cwd = cwd
        self.out = out
        self.notes: list[str] = []  # what was decided between steps (a step skipped, a backend handed over)

    def line(self, text: str) -> None:
        """A decision of triage's: said, and kept for bug-report.md beside the commands."""
        self.notes.append(text)
        self.say(text)

    def start(self, step: Step, number: int) -> None:
        self.say(f"[{number}] {step.name}: {step.shown(self.cwd)}")

    def end(self, step: Step) -> None:
        if step.name == "capture":
            what = "the script succeeded" if step.code == 0 else f"the script exited {step.code}"
        else:
            what = MEANING.get(step.code or 0, "a crash" if (step.code or 0) < 0 else f"exit {step.code}")
        self.say(f"{step.name}: exit {step.code} ({what})")

    def interrupted(self, steps: list[Step], between: bool = False) -> None:
        kept = [p for st in steps for p in (st.stdout, *st.files) if p is not None and p.exists()]
        names = ", ".join(p.name for p in kept) or "nothing yet"
        self.say(f"stopped {'after' if between else 'during'} {steps[-1].name}: what was done stays in "
                 f"{rel(self.out, self.cwd)} ({names}); no further step ran")

    def finish(self, steps: list[Step], code: int) -> int:
        files = sorted(p.name for p in self.out.iterdir())
        self.say(f"{rel(self.out, self.cwd)}: {', '.join(files)}")
        self.say(f"read {rel(self.out / 'bug-report.md', self.cwd)} first; the page is {rel(self.out / 'report.html', self.cwd)}"
                 f" (exit {code}: {MEANING.get(code, '')})")
        return code
