"""Text for a terminal, in one leaf module (it imports nothing of ours, so every module may use it).

Guarantees: :func:`printable` never returns a control character other than a tab (and newlines when
asked), so text from a stream or a model cannot move the cursor, retitle the window or hide text.
Not guaranteed: width. A line may be as long as what it quotes; :func:`summary_line` cuts at 500.
"""

from __future__ import annotations

import unicodedata

_BIDI = {0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F}


def printable(text: object, *, newlines: bool = False) -> str:
    """``text`` safe for a terminal: control characters (ESC and every other C0/C1 code, DEL) and
    bidi overrides are written as ``\\x1b``-style escapes, so a stream cannot move the cursor,
    retitle the window or hide text. Tabs stay; newlines stay only when ``newlines``."""
    out = []
    for ch in str(text):
        o = ord(ch)
        if ch == "\t" or (ch == "\n" and newlines):
            out.append(ch)
        elif o < 0x20 or 0x7F <= o < 0xA0 or o in _BIDI or unicodedata.category(ch) in ("Cs", "Co"):
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}")
        else:
            out.append(ch)
    return "".join(out)


def summary_line(message: str) -> str:
    """One line of a many-line exception text: its first line, and the next one where the first only
    introduces it (``backend='inductor' raised:``)."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    out = lines[0]
    if out.endswith(":") and len(lines) > 1:
        out = f"{out} {lines[1]}"
    return out[:500]


def exception_line(e: BaseException) -> str:
    """``RuntimeError: first line``: how every tool names an exception in one line (benchrun's
    ``fail_to_run``, kdiff's eager failures)."""
    return f"{type(e).__name__}: {summary_line(str(e))}"[:500]
