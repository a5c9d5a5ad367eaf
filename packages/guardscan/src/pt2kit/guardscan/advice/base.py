"""What an advice rule is: a name, a docstring saying what/why/example, and ``check(findings)``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..findings import Findings, RecompileInfo


@dataclass(frozen=True)
class AdviceItem:
    rule: str
    message: str
    change: str | None = None  # the concrete change, as code
    source: str | None = None  # the user's file:line it applies to


class Rule:
    name = ""

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        raise NotImplementedError


def where(file: str | None, line: int | None) -> str | None:
    return f"{file}:{line}" if file and line else None


def tensor_var(name: str) -> str:
    """What to call a guard's tensor in a model file: ``x`` for ``L['x']``; ``args[0]`` (a model called
    through torch's wrapper) is the model file's ``example_inputs[0]``, and ``kwargs['input_ids']``
    (a model called with keyword arguments) its ``example_inputs['input_ids']``."""
    m = re.match(r"^L\['(\w+)'\](.*)$", name)
    if m:
        name = m.group(1) + m.group(2)
    for container in ("args", "kwargs"):
        if name.startswith(container + "["):
            return "example_inputs" + name.removeprefix(container)
    return name


@dataclass(frozen=True)
class Input:
    """A recompile's tensor as the user's own code knows it, and where a change for it goes."""

    code: str  # what a change writes: a name in the user's code, else a <placeholder> that says which tensor
    said: str  # how a message names it
    before: str  # where the change goes, for its comment: "before the call at train.py:12"
    source: str | None  # the line the change goes before (the advice's source)


_ARG = re.compile(r"^(?:(?:kwargs\[['\"](?P<k>[^'\"]+)['\"]\])|args\[(?P<i>\d+)\]|(?P<n>[A-Za-z_]\w*))(?P<rest>.*)$")


def user_input(f: Findings, r: RecompileInfo) -> Input:
    """``r.tensor`` in the user's terms. A model file's run names ``example_inputs`` (the file's own
    variable). A script's (captured, or a trace) has no such variable and Dynamo's name is the compiled
    frame's parameter, so: what the user's calling line passed (``batch['input_ids']`` for
    ``model(**batch)``), else which argument it was, with that line, as a placeholder no one can mistake for
    a name in their code (Dynamo's own recompile message names the frame's parameter and function alone)."""
    tensor = r.tensor or "?"
    if f.model_file:
        x = tensor_var(tensor)
        return Input(x, x, "before the first call", r.source)
    where = _short(r.called_from) if r.called_from else None
    if r.argument:
        return Input(r.argument, r.argument, f"before the call at {where}", r.called_from)
    m = _ARG.match(tensor)
    if m and m.group("n") != "self":
        key = m.group("k") or m.group("n")
        which = (f"passed as {key}" if key else f"passed as positional argument {int(m.group('i')) + 1}") + (
            f", then {m.group('rest')}" if m.group("rest") else "")
        said = f"the tensor {which}"
    else:
        said = f"the tensor the compiled frame reads as {tensor}"
    if where is None:
        return Input(f"<{said}>", said, "before the compiled call", r.source)
    line = f" ({r.call.strip()})" if r.call else ""
    return Input(f"<{said}>", f"{said} at {where}{line}", f"before it reaches the call at {where}", r.called_from)


def _short(where: str) -> str:
    """``/home/u/train.py:12`` as a comment says it: ``train.py:12``."""
    path, _, line = where.rpartition(":")
    return f"{path.rpartition('/')[2]}:{line}"
