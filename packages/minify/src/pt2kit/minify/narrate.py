"""What minify says on stderr about one model: the failure a stream asked it to keep, then one line of
outcome (and where the repro was written), from the `repro` record it made."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pt2kit.runtime.parent.narrate import Narrator as Base
from pt2kit.schema import Bisect, Repro

from .records import Outcome

if TYPE_CHECKING:
    from .parent.targets import Target


class Narrator(Base):
    def __init__(self, say: Any, label: str, job: Any = None) -> None:
        super().__init__(say, label, job)
        self.repro: Repro | None = None
        self.bisect: Bisect | None = None

    def minifying(self, t: Target) -> None:
        w = t.want
        what = w.kind + (f" ({w.constraint}: {w.op})" if w.op else "")
        self.say(f"{t.where}: minifying the {what} failure of {t.label}")

    def on_repro(self, r: Repro) -> None:
        self.repro = r

    def on_bisect(self, r: Bisect) -> None:
        self.bisect = r

    def finish(self, value: Outcome, notes: dict[str, Any] | None = None) -> int:
        self.say(f"{self.label}: {value.message}")
        if value.bisect is not None:
            from .parent.bisected import line

            self.say(f"{self.label}: {line(value.bisect)}")
        if self.repro is not None and self.repro.output:
            out = self.repro.output
            self.say(f"{self.label}: repro written to {out}; run it with `python {out}` (exit 1 while the bug is "
                     "present, 0 once fixed, 125 where it cannot run)")
        return value.code
