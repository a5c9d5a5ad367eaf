"""The one shape of every tool's narration: typed records in, stderr out.

A tool's ``narrate.py`` subclasses :class:`Narrator` and defines ``on_<kind>(rec)`` for the record kinds
it speaks of (``on_diff``, ``on_divergence``, ``on_kernel``...) and :meth:`Narrator.finish` for the line
that ends a model's run. The parent hands every line its worker writes to :meth:`Narrator.record`, which
decodes it once into its Struct (:func:`pt2kit.schema.decode`) and dispatches on the record's kind.

Guarantees: a handler sees a typed, validated record, never bytes or a dict; a line that does not
decode (a kind newer than this schema) is passed over, as a reader of the stream would. Not
guaranteed: the order of narration against the progress line's own output on a shared terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from pt2kit.schema import Record, decode

from ..common.errors import EXIT_OK

Say = Callable[[str], None]


class Narrator:
    """Says what one model's records mean. ``say`` writes a line to stderr; ``label`` names the model;
    ``job`` is the Job the worker runs, for what the summary quotes (its backends, its rule)."""

    def __init__(self, say: Say, label: str, job: Any = None) -> None:
        self.say = say
        self.label = label
        self.job = job

    def record(self, raw: bytes) -> None:
        try:
            rec = decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        self.on(rec)

    def on(self, rec: Record) -> None:
        """Dispatch one typed record to ``on_<kind>``, when this narrator has one."""
        handler = getattr(self, f"on_{type(rec).__struct_config__.tag}", None)
        if handler is not None:
            handler(rec)

    def finish(self, value: Any, notes: dict[str, Any]) -> int:
        """The worker has returned ``value`` (its notes for the parent in ``notes``): say the summary and
        return this model's exit code."""
        return EXIT_OK
