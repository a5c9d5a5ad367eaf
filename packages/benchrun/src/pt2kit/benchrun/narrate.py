"""What benchrun says on stderr: a line per job as its record is made, a table at the end.

The sweep's parent makes the `bench` and `crash` records itself and hands each typed record to
:meth:`Narrator.on`; :meth:`Narrator.finish` says the table and returns the sweep's exit code.
"""

from __future__ import annotations

from typing import Any

from pt2kit.runtime.common.errors import EXIT_CRASH, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from pt2kit.runtime.common.outcome import OWN, nothing_line
from pt2kit.runtime.common.text import summary_line
from pt2kit.runtime.parent.narrate import Narrator as Base
from pt2kit.runtime.parent.narrate import Say
from pt2kit.schema import Bench, Crash


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.0f} MiB"


def speedup(b: Bench) -> str:
    if b.speedup is None:
        return "-"
    return f"{b.speedup:.2f}x [{b.speedup_lo:.2f}, {b.speedup_hi:.2f}]"


def job_line(b: Bench) -> str:
    """One line for a `bench` record."""
    head = f"{b.model} × {b.backend}"
    if b.error:
        return f"{head}: FAIL TO RUN: {summary_line(b.error)}"
    parts = []
    if b.latency and b.eager:
        parts.append(f"{speedup(b)} (eager {ms(b.eager.median)} -> {ms(b.latency.median)}, n={b.latency.n})")
    cold, warm = b.compile_cold, b.compile_warm
    if cold:
        parts.append(f"compile {cold.total_s:.1f} s cold" + (f", {warm.total_s:.1f} s warm" if warm else ""))
    if b.memory and b.memory.warm_allocated:
        parts.append(f"peak {mib(b.memory.warm_allocated)} warm, {mib(b.memory.cold_allocated)} cold")
    if b.graphs is not None:
        parts.append(f"{b.graphs} graph(s), {b.breaks or 0} break(s), {b.recompiles or 0} recompile(s)")
    if b.graphs == 0:  # the "compiled" timing is eager code's (runtime.outcome: exit 1, never a clean run)
        parts.append(nothing_line([]).split(" (")[0] + ": the compiled timing is eager code's")
    if b.accuracy:
        parts.append(f"accuracy {b.accuracy}" + (f" ({b.accuracy_note})" if b.accuracy_note else ""))
    return f"{head}: " + "; ".join(parts)


def crash_line(c: Crash) -> str:
    what = c.message or c.signal or c.exception or "crashed"
    if what.startswith("timed out"):
        return f"{c.model} × {c.backend}: TIMEOUT: {what}"
    return f"{c.model} × {c.backend}: CRASH during {c.stage}: {summary_line(what)}"


def table(rows: list[Bench | Crash]) -> list[str]:
    """The sweep's summary, one line a job: model, backend, eager and compiled medians, speedup, accuracy."""
    out = [f"{'model':<28} {'backend':<22} {'eager':>10} {'compiled':>10} {'speedup [95% CI]':>24} {'compile':>9}"
           "  accuracy"]
    for r in rows:
        model, backend = (r.model or "")[:28], (r.backend or "")[:22]
        if isinstance(r, Crash):
            out.append(f"{model:<28} {backend:<22} {'crash':>10}")
            continue
        cold = r.compile_cold
        out.append(f"{model:<28} {backend:<22} {ms(r.eager.median if r.eager else None):>10} "
                   f"{ms(r.latency.median if r.latency else None):>10} {speedup(r):>24} "
                   f"{(str(round(cold.total_s, 1)) + ' s') if cold else '-':>9}  {r.accuracy or '-'}")
    return out


def exit_for(b: Bench, fail_below: float | None) -> int:
    """A job's exit code: 3 fail_to_run (2 where eager fails: the model's own), 1 fail_accuracy, nothing compiled or a speedup wholly below
    ``fail_below``."""
    if b.accuracy == "fail_to_run":  # the model's own eager run failing is the model's (exit 2), not a crash
        return EXIT_USAGE if (b.error or "").startswith(f"eager: {OWN}") else EXIT_CRASH
    if b.accuracy == "fail_accuracy" or b.graphs == 0:
        return EXIT_FINDINGS
    if fail_below is not None and b.speedup_hi is not None and b.speedup_hi < fail_below:
        return EXIT_FINDINGS
    return EXIT_OK


class Narrator(Base):
    """The sweep's voice. ``job`` is the sweep's Job (its --fail-below); ``label`` is unused: each line
    names its job (``MODEL × BACKEND``)."""

    def __init__(self, say: Say, label: str = "", job: Any = None) -> None:
        super().__init__(say, label, job)
        self.rows: list[Bench | Crash] = []
        self.code = EXIT_OK

    def on_bench(self, b: Bench) -> None:
        self.rows.append(b)
        self.code = max(self.code, exit_for(b, self.job.fail_below if self.job is not None else None))
        self.say(job_line(b))

    def on_crash(self, c: Crash) -> None:
        self.rows.append(c)
        self.code = max(self.code, EXIT_CRASH)
        self.say(crash_line(c))

    def finish(self, value: Any = None, notes: dict[str, Any] | None = None) -> int:
        """The table, when the sweep ran more than one job; the worst job's exit code."""
        if len(self.rows) > 1:
            for line in table(self.rows):
                self.say(line)
        return self.code
