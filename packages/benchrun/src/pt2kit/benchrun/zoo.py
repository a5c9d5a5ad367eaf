"""The bundled model files (``zoo/``): listed by ``benchrun --zoo``, named on the command line as
``zoo:NAME``. Each builds its model from a config with random weights (seeded), so nothing is
downloaded; transformers and timm are the optional extra ``pt2kit-benchrun[zoo]``."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from pt2kit.runtime.common.errors import UsageError

ZOO = Path(__file__).parent / "zoo"


def models() -> dict[str, Path]:
    return {p.stem: p for p in sorted(ZOO.glob("*.py")) if not p.name.startswith("_")}


def resolve(spec: str) -> str:
    """``zoo:NAME`` -> the zoo file's path; anything else as given."""
    if not spec.startswith("zoo:"):
        return spec
    name = spec[4:]
    found = models()
    if name not in found:
        raise UsageError(f"{spec}: no such zoo model; the zoo has {', '.join(found)} (benchrun --zoo)")
    return str(found[name])


def listing() -> int:
    """Print the zoo, one model a line: name, what it is (the file's docstring), path."""
    for name, path in models().items():
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        sys.stdout.write(f"zoo:{name:<12} {doc.splitlines()[0] if doc else ''}\n{'':17}{path}\n")
    return 0
