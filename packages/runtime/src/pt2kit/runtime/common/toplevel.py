"""Whether importing a Python file runs anything but definitions: the one rule a ``--backend FILE.py:NAME``
(and a ``--config HOOK=FILE.py:NAME``) is loaded under, read from the file's source alone (:mod:`ast`),
before anything of it runs.

Why: a backend is loaded by importing its file, and a tool imports it once per worker (triage's kdiff
and minify: a dozen times). A script whose own run (training, cleaning an output folder, writing to a
results database) is not under ``if __name__ == "__main__":`` would do that again each time, said nowhere.
Such a file is refused in one line that says how to hand the backend over instead.

A leaf: it imports nothing of the runtime, so :mod:`.pyfile` (the loader) and triage's parent both ask it
without importing torch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Runs", "runs_at_import", "unguarded"]

# modules whose functions, called at a file's top level, build things (a model, a tensor, a logger, a
# registration) rather than do a run; a segment of UNSAFE in the called name still refuses one
LIBRARIES = frozenset({
    "torch", "functorch", "triton", "numpy", "transformers", "timm", "torchvision",
    "abc", "collections", "contextlib", "copy", "dataclasses", "enum", "functools", "itertools", "math",
    "numbers", "operator", "random", "re", "string", "types", "typing", "typing_extensions", "warnings",
})
STDLIB_CALLS = frozenset({
    "logging.getLogger", "os.getenv", "os.environ.get", "os.environ.setdefault", "os.fspath", "os.getcwd",
    "os.path.abspath", "os.path.basename", "os.path.dirname", "os.path.exists", "os.path.expanduser",
    "os.path.isdir", "os.path.isfile", "os.path.join", "os.path.realpath", "pathlib.Path", "pathlib.PurePath",
    "sys.path.append", "sys.path.insert", "sys.setrecursionlimit",
})
# a called name holding one of these segments (or one starting so) reads or writes files, reaches the
# network or other processes, or runs a model or a training loop: not a definition
UNSAFE = frozenset({"hub", "distributed", "multiprocessing", "onnx", "profiler"})
UNSAFE_LAST = frozenset({"export", "backward"})  # torch.export.export runs the model (torch.export.Dim does not)
UNSAFE_PREFIXES = ("save", "load", "dump", "write", "remove", "rmtree", "unlink", "download", "from_pretrained",
                   "run", "fit", "train", "main", "system", "exec", "spawn", "launch", "step")
BUILTINS = frozenset({
    "abs", "all", "any", "bool", "bytes", "callable", "chr", "classmethod", "complex", "dict", "divmod",
    "enumerate", "filter", "float", "format", "frozenset", "getattr", "hasattr", "hash", "int", "isinstance",
    "issubclass", "iter", "len", "list", "map", "max", "min", "object", "ord", "pow", "property", "range",
    "repr", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "type",
    "zip",
})
# methods of a value the file built (a model, a tensor, a dict, a path) that only shape or move it
METHODS = frozenset({
    "to", "cuda", "cpu", "eval", "half", "float", "double", "bfloat16", "requires_grad_", "contiguous", "clone",
    "detach", "view", "reshape", "permute", "transpose", "unsqueeze", "squeeze", "expand", "repeat", "t",
    "fill_", "zero_", "normal_", "uniform_", "manual_seed", "parameters", "named_parameters", "modules",
    "get", "items", "keys", "values", "copy", "format", "join", "split", "strip", "replace", "lower", "upper",
    "resolve", "with_suffix", "with_name", "with_stem", "joinpath", "expanduser", "absolute",
    "append", "extend", "update", "add", "setdefault",
    # registrations: a torch.library.Library's ops, a module's buffers and submodules
    "define", "impl", "register_fake", "register_autograd", "register_kernel", "register_buffer",
    "register_parameter", "register_module", "add_module",
})


@dataclass(frozen=True)
class Runs:
    """The first top-level statement of a file that runs something on import: its line and its source."""

    line: int
    text: str


def runs_at_import(path: Path) -> Runs | None:
    """The first statement importing ``path`` runs that is not a definition; None where its top level only
    defines things (or it does not parse: the loader then says its syntax error as it always did).

    The rule, conservative (a file it refuses is one the user splits, never one that runs twice):

    * allowed: imports; ``def`` and ``class`` (a class body under this same rule); assignments, a docstring,
      ``pass``, ``del``, ``assert``; ``if``/``try`` whose every branch keeps to this rule; and
      ``if __name__ == "__main__":``, whose body is never looked at (it does not run on import);
    * every call an allowed statement makes (in a value, a decorator, a default argument, a base class) must
      be one that builds rather than runs: a class the file defines (``model = Net()``); a function of
      :data:`LIBRARIES` (``torch.randn``, ``torch.compile``, ``functools.partial``) whose dotted name holds
      no segment of :data:`UNSAFE` nor one starting with :data:`UNSAFE_PREFIXES` (``torch.save``,
      ``numpy.load``, ``torch.export.export``); one of :data:`STDLIB_CALLS`; a builtin of :data:`BUILTINS`
      (not ``print``, ``open``, ``exec``); a method of :data:`METHODS` on a value (``.to(device)``, ``.eval()``);
    * a call of a function the file defines builds where that function's body keeps to this same rule (a
      factory: ``relu_grad = _planted(op, wrong)``, ``install()`` setting a table entry); ``train()``, with
      its loop, or ``main()``, calling it, runs;
    * anything else runs: a loop, a ``with``, a ``raise``, a call of a value the file made (``compiled(x)``),
      of what a call returned (``torch.compile(m)(x)``), or of any other module's function (``print``,
      ``shutil.rmtree``). A lambda's body, and a nested ``def``'s, is not looked at (it does not run).

    Not checked: what an imported module or a class's ``__init__`` does (a library, a model's constructor)."""
    try:
        data = path.read_bytes()
        tree = ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return None
    source = data.decode(errors="replace").splitlines()
    scope = _Scope.of(tree)
    node = _first_run(tree.body, scope)
    if node is None:
        return None
    text = source[node.lineno - 1].strip() if node.lineno <= len(source) else ""
    return Runs(node.lineno, text if len(text) <= 60 else text[:57] + "...")


def unguarded(path: Path, name: str, flag: str = "--backend", noun: str = "backend") -> str | None:
    """The one line that refuses to load ``name`` (a ``noun`` handed over as ``flag``) from ``path`` because
    importing it runs more than definitions (:func:`runs_at_import`); None where loading it is safe."""
    runs = runs_at_import(path)
    if runs is None:
        return None
    given = f"{flag}FILE.py:{name}" if flag.endswith("=") else f"{flag} FILE.py:{name}"
    return (f"{path.name} runs code at import (line {runs.line}: `{runs.text}`), so its {noun} {name} cannot be "
            f"loaded from it without running the script again: put the {noun} in a file of its own and pass "
            f"{given}, or put the script's run under if __name__ == \"__main__\":")


@dataclass
class _Scope:
    aliases: dict[str, str]  # a name an import binds -> what it names ("nn" -> "torch.nn")
    classes: set[str]  # classes the file defines at its top level
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]  # functions it defines there
    defined: set[str]  # every other name the top level binds (an assignment): never a builtin
    verdicts: dict[str, bool] = field(default_factory=dict)  # function -> whether calling it only builds

    @classmethod
    def of(cls, tree: ast.Module) -> _Scope:
        scope = cls({}, set(), {}, set())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    scope.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")  # a relative import names no library
                for a in node.names:
                    scope.aliases[a.asname or a.name] = f"{base}.{a.name}"
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                scope.classes.add(node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                scope.functions[node.name] = node
            else:
                scope.defined.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        for name in scope.classes | scope.defined | set(scope.functions):  # the file rebinds it: not the import's
            scope.aliases.pop(name, None)
        return scope

    def builds(self, name: str) -> bool:
        """Whether calling the file's function ``name`` only builds: its body keeps to the rule (a factory
        returning a backend does; ``train()``, with its loop, does not). Recursion counts as running."""
        if name not in self.verdicts:
            fn = self.functions[name]
            self.verdicts[name] = False
            self.verdicts[name] = not isinstance(fn, ast.AsyncFunctionDef) and _first_run(fn.body, self) is None
        return self.verdicts[name]


def _is_main_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and \
        any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def _first_run(body: list[ast.stmt], scope: _Scope) -> ast.stmt | ast.expr | None:
    """What in ``body`` (a module's, a class's, a branch's) first runs something: a statement, or the call."""
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom | ast.Pass | ast.Global | ast.Nonlocal):
            continue
        if isinstance(stmt, ast.Return):  # a function's body (:meth:`_Scope.builds`)
            found = _first_call([stmt.value], scope) if stmt.value is not None else None
        elif isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
            found = _first_run(stmt.orelse, scope)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            a = stmt.args
            annotations = [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                           if x is not None and x.annotation is not None]
            exprs = [*stmt.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None), *annotations,
                     *([stmt.returns] if stmt.returns else [])]
            found = _first_call(exprs, scope) or _decorators(stmt.decorator_list, scope)
        elif isinstance(stmt, ast.ClassDef):
            found = (_first_call([*stmt.decorator_list, *stmt.bases, *(k.value for k in stmt.keywords)], scope)
                     or _decorators(stmt.decorator_list, scope) or _first_run(stmt.body, scope))
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Expr | ast.Delete | ast.Assert):
            found = _first_call([stmt], scope)
        elif isinstance(stmt, ast.If):
            found = _first_call([stmt.test], scope) or _first_run(stmt.body, scope) or _first_run(stmt.orelse, scope)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            found = (_first_run(stmt.body, scope) or _first_call([h.type for h in stmt.handlers if h.type], scope)
                     or next((f for h in stmt.handlers if (f := _first_run(h.body, scope))), None)
                     or _first_run(stmt.orelse, scope) or _first_run(stmt.finalbody, scope))
        else:  # a loop, a with, a raise, a match: the script's run
            found = stmt
        if found is not None:  # the call itself where it is one: a decorator's line, not its def's
            return found
    return None


def _decorators(decorators: list[ast.expr], scope: _Scope) -> ast.expr | None:
    """A decorator is called with what it decorates: the first whose callee is not one that builds."""
    return next((d for d in decorators if not isinstance(d, ast.Call) and not _builds(d, scope)), None)


def _first_call(nodes: list[ast.AST], scope: _Scope) -> ast.expr | None:
    """The first call under ``nodes`` (a lambda's body left out: it does not run) that does not build."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Lambda):
            stack.extend(reversed([*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]))
            continue
        if isinstance(node, ast.Call) and not _builds(node.func, scope):
            return node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return None


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def _builds(func: ast.expr, scope: _Scope) -> bool:
    """Whether calling ``func`` builds something (see :func:`runs_at_import`'s rule)."""
    chain = _dotted(func)
    if chain is None:  # a method of what an expression returned (Net().eval()), or a call of it (f()(x))
        return isinstance(func, ast.Attribute) and func.attr in METHODS
    root, rest = chain[0], chain[1:]
    if root in scope.aliases:
        return _library_builds(".".join([scope.aliases[root], *rest]))
    if root in scope.classes and not rest:
        return True
    if root in scope.functions and not rest:
        return scope.builds(root)
    if not rest:
        return root in BUILTINS and root not in scope.defined
    return chain[-1] in METHODS  # a method of a value the file made (model.eval(), x.to(device))


def _library_builds(name: str) -> bool:
    if name in STDLIB_CALLS:
        return True
    head, *rest = name.split(".")
    return head in LIBRARIES and (not rest or rest[-1] not in UNSAFE_LAST) and \
        not any(p in UNSAFE or p.startswith(UNSAFE_PREFIXES) for p in rest)
