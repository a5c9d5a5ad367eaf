"""The `bisect` record's text, torch-free: what the repro's docstring says of the stage (:mod:`.bisect`
found it), and minify's stderr line. Every string from a run passes pt2kit_portable's ``escape``
before it enters the docstring."""

from __future__ import annotations

import textwrap
from typing import Any

import pt2kit_portable

DOC_MARK = "\n`python repro.py` exits 1 while the bug is present"


def line(fields: dict[str, Any]) -> str:
    """One line: the stage found (and checked), or why none is told."""
    runs = ""
    if fields.get("found") and fields.get("off") and fields.get("on"):
        runs = "; checked: off, it passes; on, it fails"
    elif fields.get("found"):
        runs = "; checked: it fails"
    steps = f" ({fields.get('steps', 0)} compiles, {fields.get('wall_s') or 0:.1f} s)"
    return f"stage: {fields.get('verdict', '')}{runs}{steps}"


def doc(fields: dict[str, Any]) -> str:
    """The paragraph the repro's docstring gets: the stage, and the two runs that check it (as the command
    lines that switch it with PyTorch's own variables, where those can)."""
    said = "Stage (minify's bisection, with compiler_bisector's switches): " + fields["verdict"]
    off, on, env = fields.get("off"), fields.get("on"), fields.get("env") or {}
    commands = fields.get("found") and "TORCH_BISECT_MAX" in env and off and on
    if commands:
        said += ". Checked:"
    elif fields.get("found") and off and on:
        said += f". Checked: {off['setting']}: passes; {on['setting']}: fails."
    elif on:
        said += f". Run: {on['setting']}: {'fails' if on['fails'] else on['signature']}."
    text = textwrap.fill(_esc(said), 110, break_long_words=False, break_on_hyphens=False) + "\n"
    if commands:
        before = {**env, "TORCH_BISECT_MAX": str(int(env["TORCH_BISECT_MAX"]) - 1)}
        for words, result in ((env, "fails (exit 1)"), (before, "passes (exit 0)")):
            text += f"    {_esc(' '.join(f'{k}={v}' for k, v in words.items()))} python repro.py  # {result}\n"
    return text


def into_repro(text: str, fields: dict[str, Any]) -> str:
    """repro.py's text with the stage's paragraph in its docstring (before the paragraph on exit codes)."""
    at = text.find(DOC_MARK)
    if at < 0:
        return text
    return text[:at] + "\n" + doc(fields) + text[at:]


def _esc(text: object) -> str:
    return pt2kit_portable.escape(text, string=True)
