"""What a model file may hold as code, for the capture boot's writer: the one escaping rule.

Runs inside the user's interpreter: stdlib only. A model file is Python that every pt2kit tool (and the
user) runs, and its strings come from the user's program: paths, function and backend names, compile
ids, parameter paths, string inputs, FX's ``# File: ... code: ...`` lines. Each passes :func:`escape`
(pt2kit_portable's: minify's repros are written by the same rule) into a comment, one line for every
reader, or a literal (pt2kit_portable's :func:`literal`: ``repr``, inf as ``1e999``); a name written as code
must be an identifier (:func:`identifier`), an attribute path dotted words (:data:`ATTR`), an import
line one of FX's forms (:data:`IMPORT`).

Guarantees: nothing a name holds becomes a line of code; a name that cannot be written so raises
ValueError (the graph is not captured, and the parent says why). Not guaranteed: that an escaped
comment reads back as the original string (backslashes are kept as they are).
"""

from __future__ import annotations

import keyword
import re

# the one escaping rule and the one literal writer of every writer of Python (minify's repros too, the
# settings collector), in the module the boot shares with them; re-exported for the boot's writer
from pt2kit_portable import escape, literal

__all__ = ["ATTR", "IMPORT", "comment", "escape", "identifier", "literal"]

# how FX's codegen and our header name things: anything else written as code is refused
ATTR = re.compile(r"\w+(?:\.\w+)*")
IMPORT = re.compile(r"import [\w.]+(?: as \w+)?|from [\w.]+ import \w+(?: as \w+)?|NoneType = type\(None\)", re.ASCII)


def comment(text: str) -> str:
    return f"# {escape(text)}"


def identifier(name: str) -> str:
    """``name`` where it is written as code (a forward argument): refused unless a Python identifier."""
    if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
        raise ValueError(f"{escape(repr(name))}: not an identifier, not written as code")
    return name
