"""What minify says on stderr: one line per model, from the outcome and the repro record's fields."""

from __future__ import annotations

from typing import Any


def outcome(say: Any, label: str, message: str, fields: dict[str, Any], output: str | None) -> None:
    say(f"{label}: {message}")
    if fields and output:
        say(f"{label}: repro written to {output}; run it with `python {output}` (exit 1 while the bug is present, 0 once fixed, 125 where it cannot run)")


def failure(say: Any, label: str, where: str, want: dict[str, Any]) -> None:
    what = want["kind"] + (f" ({want['constraint']}: {want['op']})" if want.get("op") else "")
    say(f"{where}: minifying the {what} failure of {label}")
