"""What an advice rule is: a name, a docstring saying what/why/example, and ``check(findings)``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..findings import Findings


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
    """What to call a guard's tensor in user code: ``x`` for ``L['x']``; ``args[0]`` (a model called
    through torch's wrapper) is the model file's ``example_inputs[0]``, and ``kwargs['input_ids']``
    (a model called with keyword arguments) its ``example_inputs['input_ids']``."""
    m = re.match(r"^L\['(\w+)'\](.*)$", name)
    if m:
        name = m.group(1) + m.group(2)
    for container in ("args", "kwargs"):
        if name.startswith(container + "["):
            return "example_inputs" + name.removeprefix(container)
    return name
