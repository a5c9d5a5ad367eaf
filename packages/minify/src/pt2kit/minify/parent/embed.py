"""Closure by source: the module-level functions, classes and constants that given entry points reach,
transitively, as their source text, so that a repro.py carries exactly the code its check runs and no
second copy of any rule (issue 58: a whole-file embedding made a 1-op repro 1,595 lines).

Guarantees:

* What an entry reaches is read from the source with :mod:`ast` and :mod:`symtable` (the global names a
  function's body, its nested functions and comprehensions load, and what a definition line evaluates:
  decorators, defaults, annotations, bases, an assignment's value), never by running it.
* A name bound by an import of the standard library or of torch stays an import, written once at the top
  (:attr:`Closure.imports`); a name from pt2kit (``pt2kit.*``, ``pt2kit_portable``, a relative import) is
  followed into the module that defines it and embedded the same way, under its own name, so what is
  embedded imports nothing of pt2kit. A name that resolves to nothing is a :class:`ValueError`, as are
  two different definitions under one name (the embedded parts share one namespace).
* Definitions come in dependency order where Python needs it (what a definition evaluates, a base class,
  a decorator, a default, a constant's value, before it) and otherwise as they are called, a caller before
  its callees, so the text reads top to bottom; each with the comment lines right above it.
  ``docstrings=False`` leaves out every docstring of what is embedded (a reader has the names and the
  comments; :meth:`Closure.origins` names the modules where the docstrings are). ``hoist=("torch",)``: a
  function's opening ``import torch`` (pt2kit_portable's, which imports without torch) is the top's one.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import inspect
import symtable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

OURS = ("pt2kit", "pt2kit_portable")  # what is embedded by source, never imported by what is embedded


@dataclass
class Closure:
    imports: list[str] = field(default_factory=list)  # `import os`, `from torch import nn`: in first-use order
    parts: list[tuple[str, str, str]] = field(default_factory=list)  # (module, name, source), dependencies first

    @property
    def names(self) -> list[str]:
        return [name for _, name, _ in self.parts]

    def origins(self) -> dict[str, list[str]]:
        """module -> the names taken from it, in the order they are embedded."""
        out: dict[str, list[str]] = {}
        for module, name, _ in self.parts:
            out.setdefault(module, []).append(name)
        return out

    def source(self) -> str:
        """The parts, a blank line between two."""
        return "\n\n".join(text for _, _, text in self.parts) + "\n"


@dataclass
class _Module:
    name: str
    lines: list[str]
    defs: dict[str, ast.stmt]  # name -> the top-level statement that defines it
    imports: dict[str, list[tuple[str, str | None]]]  # name -> [(absolute module, its attribute; None: `import m`)]
    tables: dict[tuple[str, int], symtable.SymbolTable]  # (name, line) -> a top-level def's table


@cache
def _load(name: str) -> _Module:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ValueError(f"{name}: no Python source to embed from")
    with open(spec.origin, encoding="utf-8") as f:
        text = f.read()
    tree = ast.parse(text)
    defs: dict[str, ast.stmt] = {}
    imports: dict[str, list[tuple[str, str | None]]] = {}
    package = name if spec.submodule_search_locations else name.rpartition(".")[0]
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:  # `import a.b` binds a, and needs a.b imported
                imports.setdefault(a.asname or a.name.split(".")[0], []).append((a.name, None))
        elif isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__":
            base = importlib.util.resolve_name("." * stmt.level + (stmt.module or ""), package) if stmt.level \
                else stmt.module or ""
            for a in stmt.names:
                imports[a.asname or a.name] = [(base, a.name)]
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defs[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        defs[n.id] = stmt
    top = symtable.symtable(text, spec.origin, "exec")
    tables = {(t.get_name(), t.get_lineno()): t for t in top.get_children()}
    return _Module(name, text.splitlines(), defs, imports, tables)


def _globals_of(table: symtable.SymbolTable) -> set[str]:
    """The global names a function's or class's body loads, its nested scopes' included."""
    out = {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
    for child in table.get_children():
        out |= _globals_of(child)
    return out


def _loads(nodes: list[Any]) -> set[str]:
    return {n.id for node in nodes if node is not None for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _ordered(stmt: ast.stmt, names: set[str]) -> list[str]:
    """``names`` less the builtins, in the order they first appear in ``stmt``'s source."""
    order: dict[str, int] = {}
    for n in ast.walk(stmt):
        if isinstance(n, ast.Name):
            order.setdefault(n.id, (n.lineno, n.col_offset))  # type: ignore[arg-type]
    return sorted(names - set(dir(builtins)), key=lambda n: (order.get(n, (1 << 30, 0)), n))


def _needs(mod: _Module, stmt: ast.stmt) -> tuple[list[str], list[str]]:
    """(what ``stmt`` needs when it is defined, what it needs when it is called): the global names of each."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        a = stmt.args
        now = _loads([*stmt.decorator_list, *a.defaults, *a.kw_defaults, stmt.returns,
                      *(x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                        if x is not None)])
        later = _globals_of(mod.tables[(stmt.name, stmt.lineno)])
    elif isinstance(stmt, ast.ClassDef):  # its body runs where it is defined; its methods' when called
        table = mod.tables[(stmt.name, stmt.lineno)]
        now = _loads([*stmt.decorator_list, *stmt.bases, *(k.value for k in stmt.keywords)])
        now |= {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
        later = set().union(*(_globals_of(t) for t in table.get_children()))
    else:
        now, later = _loads([stmt]), set()
    return _ordered(stmt, now), _ordered(stmt, later - now)


def _docstrings(stmt: ast.stmt) -> list[tuple[int, int]]:
    """The line spans of the docstrings of ``stmt`` and of every def and class inside it (one that is a
    body's only statement stays: it holds the body up)."""
    spans = []
    for node in ast.walk(stmt):
        body = getattr(node, "body", None) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef
                                                          | ast.ClassDef) else None
        if body and len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            spans.append((body[0].lineno, body[0].end_lineno or body[0].lineno))
    return spans


def _hoisted(stmt: ast.stmt, hoist: tuple[str, ...]) -> list[ast.Import]:
    """The ``import M`` statements (M of ``hoist``, no alias) a function's body opens with, after its docstring,
    never its last statement: pt2kit_portable imports torch inside each function, so that importing it needs no
    torch; what embeds it imports M at its top anyway, and the function reads M from there."""
    if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    body, out = stmt.body, []
    start = int(isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str))
    for s in body[start:-1]:
        if not (isinstance(s, ast.Import) and all(a.asname is None and a.name in hoist for a in s.names)):
            break
        out.append(s)
    return out


def _text(mod: _Module, stmt: ast.stmt, docstrings: bool, hoist: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """(the statement's text, the modules of the imports :func:`_hoisted` took out of it)."""
    first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
    while first > 1 and mod.lines[first - 2].lstrip().startswith("#"):  # the comment that says why, above it
        first -= 1
    lines = mod.lines[first - 1:stmt.end_lineno]
    hoisted = _hoisted(stmt, hoist)
    cut = [] if docstrings else _docstrings(stmt)
    for s in hoisted:  # the import and the blank line after it
        blank = s.end_lineno < len(mod.lines) and not mod.lines[s.end_lineno].strip()  # type: ignore[operator]
        cut.append((s.lineno, s.end_lineno + blank))  # type: ignore[operator]
    for start, end in sorted(cut, reverse=True):
        del lines[start - first:end - first + 1]
    return "\n".join(lines), [a.name for s in hoisted for a in s.names]


def _import_line(module: str, attr: str | None, name: str) -> str:
    if attr is None:
        return f"import {module}" if module.split(".")[0] == name else f"import {module} as {name}"
    return f"from {module} import {attr}" + ("" if attr == name else f" as {name}")


def _entry(e: Any) -> tuple[str, str]:
    """(module, name) of an entry: a function or class object defined at a module's top level, or the pair."""
    if isinstance(e, tuple):
        return e
    if not (inspect.isfunction(e) or inspect.isclass(e)) or e.__qualname__ != e.__name__:
        raise ValueError(f"{e!r}: not a module-level function or class")
    return e.__module__, e.__name__


def closure(entries: list[Any], docstrings: bool = True, ours: tuple[str, ...] = OURS,
            hoist: tuple[str, ...] = ()) -> Closure:
    """The source of ``entries`` and of everything they reach (the module docstring says how); ``ours``: the
    top-level packages whose names are embedded, never imported; ``hoist``: modules whose ``import`` a function
    opens with becomes one import at the top (:func:`_hoisted`)."""
    out = Closure()
    taken: dict[str, tuple[str, str]] = {}  # name in the embedded namespace -> (module, name) it is
    busy: set[tuple[str, str]] = set()

    def bind(name: str, where: tuple[str, str]) -> None:
        if taken.setdefault(name, where) != where:
            raise ValueError(f"{name}: both {taken[name][0]}.{taken[name][1]} and {where[0]}.{where[1]} would "
                             "be embedded under that name")

    def visit(module: str, name: str, alias: str) -> None:
        mod = _load(module)
        if name in mod.imports and name not in mod.defs:
            for source, attr in mod.imports[name]:  # several for `import importlib` and `import importlib.util`
                if attr is not None and source.split(".")[0] in ours:  # a re-export: the definition is where it leads
                    return visit(source, attr, alias)
                if source.split(".")[0] in ours:
                    raise ValueError(f"{module}: `import {source}` cannot be embedded; import the names it uses")
                bind(alias, (source.split(".")[0], "") if attr is None else (source, attr))
                line = _import_line(source, attr, alias)
                if line not in out.imports:
                    out.imports.append(line)
            return
        if name not in mod.defs:
            raise ValueError(f"{module}.{name}: not defined at its module's top level, so it cannot be embedded")
        if alias != name:
            raise ValueError(f"{module}.{name} is imported as {alias}: embed it under its own name")
        key = (module, name)
        if key in busy:
            return
        busy.add(key)
        bind(name, key)
        stmt = mod.defs[name]
        now, later = _needs(mod, stmt)
        for dep in now:  # defined before it: its definition evaluates them
            if dep != name:
                visit(module, dep, dep)
        text, hoisted = _text(mod, stmt, docstrings, hoist)
        for m in hoisted:
            bind(m, (m, ""))
            if f"import {m}" not in out.imports:
                out.imports.append(f"import {m}")
        if all(p[2] != text for p in out.parts):  # `a, b = ...` defines two names in one statement
            out.parts.append((module, name, text))
        for dep in later:  # after it: a function reads as its caller calls it, top to bottom
            if dep != name:
                visit(module, dep, dep)

    for e in entries:
        module, name = _entry(e)
        visit(module, name, name)
    return out

