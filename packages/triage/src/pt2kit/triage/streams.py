"""What a step's stream holds that decides the next step: the graphs captured, the graphs whose compile or
compiled code crashed, the backends that are code, the passes and decompositions the script installed as
code, and the records minify takes as failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pt2kit.runtime.common.errors import UsageError
from pt2kit.schema import Crash, Diff, Header, Kernel, Model, Repro, Violation, read_stream


@dataclass
class Seen:
    models: list[str] = field(default_factory=list)  # model labels, in order
    crashes: list[str] = field(default_factory=list)  # models whose compile or compiled call crashed
    backend_code: set[str] = field(default_factory=set)  # FILE.py:NAME of backends that are code
    code_settings: dict[str, set[str]] = field(default_factory=dict)  # hooks and decompositions set to code: where
    failing: list[str] = field(default_factory=list)  # "kind model" of each record minify would take
    traces: int = 0  # structured traces of processes that kept no graph (guardscan says why from them)
    crashed: dict[str, list[str | None]] = field(default_factory=dict)  # tool -> the model each of its crashes names
    reproduced: set[str] = field(default_factory=set)  # models whose crash a repro reproduces (minify's `repro`)
    judged: set[str] = field(default_factory=set)  # models kdiff wrote a verdict on (a `diff` of its run)

    def explained(self) -> set[str]:
        """The tools (``kdiff``) whose every crash is the compiler's crash of a graph that minify's repro
        reproduces: that crash is the bug found, no crash of the tool."""
        return {tool for tool, models in self.crashed.items() if all(m in self.reproduced for m in models)}


def read(path: Path) -> Seen:
    seen = Seen()
    tools: dict[str, str] = {}  # run -> the tool that wrote it
    for line in read_stream([path], want=(Header, Model, Crash, Diff, Kernel, Violation, Repro)):
        r = line.record
        if isinstance(r, Crash):
            seen.crashed.setdefault(tools.get(r.run, ""), []).append(r.model)
        if isinstance(r, Header):
            seen.traces += len(r.traces)
            tools[r.run] = r.tool
        elif isinstance(r, Repro):
            if r.failure == "crash" and r.reproduces and r.model is not None:
                seen.reproduced.add(r.model)
        elif isinstance(r, Model):
            if r.model not in seen.models:
                seen.models.append(r.model)
            if r.captured is not None and r.captured.backend_code:
                seen.backend_code.add(r.captured.backend_code)
            for key, where in (r.captured.code_settings if r.captured is not None else {}).items():
                seen.code_settings.setdefault(key, set()).add(where)
        elif isinstance(r, Crash) and r.model is not None:
            seen.crashes.append(r.model)
            seen.failing.append(f"crash {r.model}")
        elif isinstance(r, Crash) and r.stage != "export" and r.exception:
            seen.failing.append("crash of the script")  # its own end by an exception (the crash comes last):
            # where no graph kept shows a failure (none kept, or kdiff passes each), minify reduces the script
        elif isinstance(r, Diff) and not r.passed:
            seen.failing.append(f"diff {r.model}")
        if isinstance(r, Diff) and tools.get(r.run) == "kdiff":
            seen.judged.add(r.model)
        elif isinstance(r, Kernel) and r.finding:
            seen.failing.append(f"kernel {r.model}")
        elif isinstance(r, Violation):
            seen.failing.append(f"violation {r.model}")
    return seen


# the argv an in-process capture's header holds (``with pt2kit.capture()``, pt2kit-capture 0.19): no command
IN_PROCESS = "(in process)"


def origin(path: Path, given: str) -> str:
    """Where ``--from``'s records came from, said in the report: a block captured in process, or the
    command ``pt2kit capture`` ran; one line, exit 2, for a file that is no capture stream."""
    try:
        first = next(iter(read_stream([path], want=(Header,))), None)
    except Exception as e:  # unreadable or not NDJSON records: read_stream's own words
        raise UsageError(f"--from {given}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    r = first.record if first is not None else None
    if not isinstance(r, Header) or r.tool != "capture":
        what = f"its first part is {r.tool}'s" if isinstance(r, Header) else "it holds no records"
        raise UsageError(f"--from {given}: not records pt2kit capture wrote ({what}); give capture's stream "
                         "(pt2kit capture --out FILE, or a notebook's cap.write(FILE))")
    if r.argv[1:] == [IN_PROCESS]:
        return "in process"
    return " ".join(r.argv[r.argv.index("--") + 1:]) if "--" in r.argv else " ".join(r.argv[1:])
