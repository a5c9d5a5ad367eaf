"""Record text in Markdown, the one way every pt2kit Markdown is written (reportgen's ``md`` format, its
``--compare``, and ``pt2kit triage``'s bug-report.md through reportgen's public names): a stream's strings
are data, and the reader (GitHub's renderer, CommonMark) must never read them as markup.

Guarantees, for any string:

* :func:`text` is one line of inline text that neither formats, links, embeds HTML (a comment or a
  ``<details>`` that would fold the rest of the page) nor breaks a table row;
* :func:`code` is one inline code span that ends where it should, whatever backticks it holds;
* :func:`block` is a fenced block that nothing inside it can close.

A one-line field keeps its newlines and control characters as visible escapes (``\\n``, ``\\x1b``): one
string, one line, shown as it is. Not guaranteed: that GitHub leaves a bare ``https://...`` in text
unlinked (its autolink extension reads one; the link shows its own target, so it deceives no one).
"""

from __future__ import annotations

from typing import Any

from pt2kit.runtime.common.text import printable

# what CommonMark or HTML may read as markup inside a line (. and = only matter at a line's start, which
# one-line text never has: what it follows is ours)
_SPECIAL = set("\\`*_{}[]()#+-!|<>~&")
_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def one_line(x: Any) -> str:
    """``x`` on one line: a newline (CR, LF) and every other control character as a visible escape."""
    return printable(str(x).replace("\r", "\\r").replace("\n", "\\n"))


def text(x: Any) -> str:
    """Record text as Markdown text, one line: every character Markdown or HTML would read is escaped."""
    return "".join(_ENTITY.get(ch) or ("\\" + ch if ch in _SPECIAL else ch) for ch in one_line(x))


def _fence(s: str) -> str:
    """A backtick run longer than any inside ``s`` (CommonMark: such a fence cannot be closed early)."""
    longest = run = 0
    for ch in s:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * (longest + 1)


def code(x: Any, *, table: bool = False) -> str:
    """Record text as one inline code span (CommonMark never reads markup inside one). In a table cell
    (``table``) ``|`` is escaped: GitHub splits a row at every other ``|``, code spans included."""
    s = one_line(x)
    if table:
        s = s.replace("|", "\\|")
    fence = _fence(s)
    # CommonMark strips one space each side, and a backtick at an end would join the fence
    pad = " " if not s or s[0] in "` " or s[-1] in "` " else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def block(s: str, lang: str = "") -> str:
    """``s`` as a fenced block whose fence is longer than any backtick run inside it (three at least)."""
    fence = "`" * max(3, len(_fence(s)))
    return f"{fence}{lang}\n{s.rstrip()}\n{fence}"
