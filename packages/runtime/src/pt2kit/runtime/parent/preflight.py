"""Options checked before a piped run says anything: what needs torch to tell (see
:mod:`pt2kit.runtime.worker.preflight`), checked once, in a worker, before stdin is read.

Why: a tool reading a stream said ``running model file ...`` (and forwarded the stream) before its first
model's worker found ``--backend nosuch`` unregistered or ``--device`` unknown; a bad option must be
exit 2 before any work is announced, as the torch-free ones are. Guarantees: nothing runs when nothing
needs torch to check (the built-in backends, cpu, no --config); it says nothing on stderr but a bad
option's line; it runs in a worker of its own, importing only what it checks, beside the warm one
(:meth:`Session.warm`) the first model takes, whose import in a pipe overlaps the tool upstream. Not guaranteed: a check
that fails for another reason than the option (a crash) stops nothing: the run itself says it.
"""

from __future__ import annotations

from typing import Any

BUILTIN = ("eager", "aot_eager", "inductor")  # what every tool runs with no lookup
TARGET = "pt2kit.runtime.worker.preflight:check"  # named, not imported: the parent side imports no worker module


def preflight(s: Any, *, backend: str | None = None, device: str | None = None,
              config: dict[str, str] | None = None) -> None:
    """Raise the UsageError of the first wrong one of ``backend``, ``device`` and ``config`` (the command
    line's), from a worker of ``s`` (the tool's Session); return at once when none needs torch."""
    payload = {"backend": None if backend in BUILTIN else backend, "device": None if device == "cpu" else device,
               "config": config or {}}
    if any(payload.values()):
        s.run_child("options", TARGET, payload, on_record=lambda raw: None, check=True)
