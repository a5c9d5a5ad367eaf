"""Every option of every tool names its flag (``typer.Option("--backend", ...)``), read with ast, so no
package is imported: run as a script by the lint session, and by pytest with the end-to-end tests.

Why: typer 0.27 (what a fresh ``pip install`` of a tool brings) names an option that gives a metavar
and no flag after the metavar (``--BACKEND``), so ``kdiff --backend`` was "No such option" there while
every test passed on the typer constraints.txt pins. A boolean option names both of its forms
(``"--localize/--no-localize"``) or the one it has (``"--grad"``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def unnamed(source: str, where: str) -> list[str]:
    """``where:line param`` for each ``typer.Option(...)`` whose first argument is not a flag name."""
    out = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for arg in [*fn.args.args, *fn.args.kwonlyargs]:
            for n in ast.walk(arg.annotation) if arg.annotation is not None else ():
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "Option":
                    first = n.args[0] if n.args else None
                    if not (isinstance(first, ast.Constant) and str(first.value).startswith("-")):
                        out.append(f"{where}:{n.lineno} {arg.arg}")
    return out


def offences() -> list[str]:
    files = [*ROOT.glob("packages/*/src/pt2kit/*/cli.py"), ROOT / "packages/runtime/src/pt2kit/runtime/parent/options.py",
             ROOT / "packages/runtime/src/pt2kit/runtime/__main__.py"]
    return [line for f in sorted(files) for line in unnamed(f.read_text(), str(f.relative_to(ROOT)))]


def test_every_option_of_every_tool_names_its_flag():
    assert offences() == []


def test_an_option_without_a_flag_name_is_found():
    src = 'def f(backend: Annotated[str, typer.Option(metavar="B")] = "", grad: Annotated[bool, typer.Option("--grad")] = False): pass'
    assert unnamed(src, "cli.py") == ["cli.py:1 backend"]


if __name__ == "__main__":
    found = offences()
    print(f"cli flags: {len(found)} option(s) without a flag name")
    for line in found:
        print("  " + line)
    sys.exit(1 if found else 0)
