"""Text for a terminal, in one leaf module (it imports nothing of ours but pt2kit_portable, so every module may use it).

Guarantees: :func:`printable` never returns a control character other than a tab (and newlines when
asked), so text from a stream or a model cannot move the cursor, retitle the window or hide text.
Not guaranteed: width. A line may be as long as what it quotes; :func:`summary_line` cuts at 500.
"""

from __future__ import annotations

import unicodedata

# how every pt2kit process names an exception in one line (capture's boot and minify's repros too)
from pt2kit_portable import exception_line, summary_line

__all__ = ["exception_line", "printable", "summary_line"]

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
