"""The import graph of every package, read from the source with ast (no package is imported, no torch):
fast enough for the lint session, which runs this file as a script and prints the counts.

It fails on:

* an import circle between modules of one package, imports inside functions included (a lazy import
  only hides a circle until the day someone hoists it; the shared helper belongs in the leaf). A folder
  without ``__init__.py`` is put on ``sys.path`` where it runs (capture's boot, in the user's process): its
  modules import each other by top-level name (``import pt2kit_capture_hook``), and so does every module
  with a source root's top-level modules (``pt2kit_portable``, which capture copies beside the boot); both
  are resolved to the file they name, so a circle through them is seen;
* a tool reaching into another tool: ``pt2kit.kdiff.localize``, a name outside that tool's ``__all__``,
  or a module of another tool named as a string (``importlib.import_module("pt2kit.kdiff.localize")``);
  the layers go one way: schema <- runtime <- tools;
* a package ``__init__`` whose ``__all__`` names something that does not resolve, or a tool without
  ``__all__`` (one with no library API has ``__all__ = ["__version__"]``).
* a source root's top-level module (``pt2kit_portable``, pt2kit-portable's one module: capture's boot and every
  repro.py take it where pt2kit is not installed) importing anything but the standard library and torch;
* a module of a torch-free side (:data:`TORCH_FREE`: runtime's ``parent``, ``common`` and ``cli``, minify's
  ``parent``: what runs in the tool's own process) that imports torch or Triton at module level, or a module
  that does so in turn: its side is a rule, not a docstring's word. Module level is what runs at import: a
  function's body and an ``if TYPE_CHECKING:`` block are not.

Not checked: imports made with computed names, and what a public name's module imports in turn.
ALLOWED lists offences known and being fixed elsewhere; an entry that no longer happens fails too
(strict, as xfail(strict=True)), so the list only shrinks.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ("pt2kit.schema", "pt2kit.runtime")  # the layers under the tools, in order
PORTABLE_IMPORTS = sys.stdlib_module_names | {"torch"}  # what a source root's top-level module may import
# The subpackages whose modules run in the tool's own process (the parent), which never imports torch: the workers
# do. Each may import torch inside a function (run in a worker, or once the tool knows it needs it).
TORCH_FREE = ("pt2kit.runtime.parent", "pt2kit.runtime.common", "pt2kit.runtime.cli", "pt2kit.minify.parent")
HEAVY = {"torch", "triton"}  # what a torch-free module may not import at module level

# An offence known and being fixed elsewhere, one line each as offences() words it (a circle by its
# modules, sorted); empty since issue 32 took every tool's fixes (4 circles, 5 other offences before), and
# again since issue 60 layered capture's boot (one knot of 12 modules once its top-level names were read).
ALLOWED: set[str] = set()


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    tree: ast.Module
    imports: set[str] = field(default_factory=set)  # absolute module names, inside functions too
    names_from: dict[str, set[str]] = field(default_factory=dict)  # module -> names taken with from-import
    strings: set[str] = field(default_factory=set)  # string constants that look like module names
    at_import: set[str] = field(default_factory=set)  # what it imports at module level (not in a function)
    on_path: bool = False  # its folder has no __init__.py: it runs with that folder on sys.path


def _roots() -> list[Path]:
    """Every package's source root (its ``src/``), from every pyproject in the repo."""
    return [p.parent / "src" for p in [ROOT / "schemas" / "pyproject.toml",
                                       *sorted((ROOT / "packages").glob("*/pyproject.toml"))]]


def _packages() -> dict[str, Path]:
    """Import name (pt2kit.kdiff) -> its source directory, for every package under ``src/pt2kit/`` (not
    pt2kit-portable, whose source root holds one top-level module)."""
    found = {}
    for src in _roots():
        name = tomllib.loads((src.parent / "pyproject.toml").read_text())["project"]["name"].removeprefix("pt2kit-")
        if (src / "pt2kit" / name).is_dir():
            found[f"pt2kit.{name}"] = src / "pt2kit" / name
    return found


def _resolve(module: Module, level: int, target: str | None) -> str:
    base = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else [])) if level else (target or "")


def _at_import(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported: not in a function's body, not under
    ``if TYPE_CHECKING:`` (a class body runs at import, so its imports count)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for orelse in child.orelse:
                    visit(ast.Module(body=[orelse], type_ignores=[]))
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child)

    visit(tree)
    return found


def _read(name: str, path: Path, is_package: bool) -> Module:
    module = Module(name, path, is_package, ast.parse(path.read_text(), str(path)),
                    on_path=not is_package and not (path.parent / "__init__.py").exists())
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            module.imports.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node.level, node.module)
            module.imports.add(target)
            module.names_from.setdefault(target, set()).update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("pt2kit."):
            module.strings.add(node.value)
    for node in _at_import(module.tree):
        if isinstance(node, ast.Import):
            module.at_import.update(alias.name for alias in node.names)
        else:
            target = _resolve(module, node.level, node.module)
            module.at_import |= {target, *(f"{target}.{alias.name}" for alias in node.names)}
    return module


def load() -> dict[str, Module]:
    modules = {}
    for src in _roots():  # each source root's top-level modules (pt2kit_portable)
        for path in sorted(src.glob("*.py")):
            modules[path.stem] = _read(path.stem, path, False)
    for package, src in _packages().items():
        for path in sorted(src.rglob("*.py")):
            parts = path.relative_to(src).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join([package, *(parts[:-1] if is_package else parts)])
            modules[name] = _read(name, path, is_package)
    return modules


def _owner(name: str) -> str | None:
    """The package (pt2kit.kdiff) a module name belongs to."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[0] == "pt2kit" else None


def _top_level(module: Module, target: str, modules: dict[str, Module]) -> str:
    """``target`` as the module it names where ``module`` runs: a module of its own folder where that folder
    is on sys.path (``pt2kit_capture_hook`` -> ``pt2kit.capture.boot.pt2kit_capture_hook``), else itself."""
    if module.on_path and "." in module.name:
        beside = f"{module.name.rpartition('.')[0]}.{target}"
        if beside in modules:
            return beside
    return target


def edges(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> the modules it imports of its own package or at top level (``pt2kit_portable``; a boot
    module's siblings, by their top-level names); ``from . import x`` where x is a module counts as
    importing x, not the package."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, module in modules.items():
        for raw in module.imports:  # raw: as the source spells it
            target = _top_level(module, raw, modules)
            if _owner(target) != _owner(name) and None not in (_owner(target), _owner(name)):
                continue
            taken = {f"{target}.{n}" for n in module.names_from.get(raw, ())} & modules.keys()
            graph[name] |= taken or ({target} & modules.keys())
        graph[name].discard(name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def public_names(init: Module) -> tuple[list[str] | None, dict[str, str]]:
    """A package's ``__all__`` (None where it has none) and its ``_PUBLIC`` map, read from the source."""
    names: list[str] | None = None
    public: dict[str, str] = {}
    for node in init.tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        target = node.targets[0].id
        if target == "_PUBLIC" and isinstance(node.value, ast.Dict):
            public = {ast.literal_eval(k): ast.literal_eval(v) for k, v in zip(node.value.keys, node.value.values, strict=True)}
        elif target == "__all__" and isinstance(node.value, ast.List):
            names = []
            for item in node.value.elts:
                if isinstance(item, ast.Starred) and isinstance(item.value, ast.Name) and item.value.id == "_PUBLIC":
                    names += list(public)
                else:
                    names.append(ast.literal_eval(item))
    return names, public


def defined(module: Module) -> set[str]:
    """Names a module's top level binds (def, class, assignment, import)."""
    names = set()
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def unresolved(modules: dict[str, Module], init: Module) -> list[str]:
    """``__all__`` names of a package that neither its ``__init__`` binds nor ``_PUBLIC`` leads to."""
    names, public = public_names(init)
    bad = []
    for name in names or []:
        if name in public:
            where, _, attr = public[name].partition(":")
            target = modules.get(_resolve(init, len(where) - len(where.lstrip(".")), where.lstrip(".")))
            if target is None or (attr or name) not in defined(target):
                bad.append(f"{init.name}.__all__ names {name}, but {public[name]} does not define it")
        elif name not in defined(init):
            bad.append(f"{init.name}.__all__ names {name}, which it does not define")
    return bad


def _loaded(name: str, modules: dict[str, Module]) -> list[str]:
    """The modules of ours that importing ``name`` runs: it, and each package above it (their ``__init__``)."""
    parts = name.split(".")
    return [m for m in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if m in modules]


def torch_at_import(modules: dict[str, Module]) -> dict[str, list[str]]:
    """Module -> the chain by which importing it imports torch or Triton (``[it, a module it imports, ...,
    "torch"]``), for each module whose import does; read from module-level imports alone."""
    chains: dict[str, list[str]] = {}
    seen: set[str] = set()  # each module is read once: a circle through module-level imports ends at itself

    def chain(name: str) -> list[str] | None:
        if name in seen:
            return chains.get(name)
        seen.add(name)
        module = modules[name]
        for raw in sorted(module.at_import):
            if raw.split(".")[0] in HEAVY:
                chains[name] = [name, raw.split(".")[0]]
                break
            for loaded in _loaded(_top_level(module, raw, modules), modules):
                found = chain(loaded) if loaded != name else None
                if found:
                    chains[name] = [name, *found]
                    break
            if name in chains:
                break
        return chains.get(name)

    for name in sorted(modules):
        chain(name)
    return chains


def offences(modules: dict[str, Module]) -> tuple[list[str], list[list[str]]]:
    """Every offence as one line, and the circles."""
    found_circles = circles(edges(modules))
    lines = [f"circle: {' <-> '.join(c)}" for c in found_circles]
    packages = {name for name in modules if modules[name].is_package and name.count(".") == 1}
    for package in sorted(packages):
        names, _ = public_names(modules[package])
        if names is None:
            lines.append(f"{package} has no __all__")
        lines += unresolved(modules, modules[package])
    for name, module in sorted(modules.items()):
        if "." not in name:  # a source root's own module (pt2kit_portable): copied and embedded where pt2kit is not
            lines += [f"{name} imports {target}: the portable layer needs the standard library and torch alone"
                      for target in sorted(module.imports) if target.split(".")[0] not in PORTABLE_IMPORTS]
        mine = _owner(name)
        for target in sorted(module.imports):
            other = _owner(target)
            if other is None or other == mine or other not in packages:
                continue
            if mine in SHARED and (other not in SHARED or SHARED.index(other) > SHARED.index(mine)):
                lines.append(f"{name} imports {target}: the layers go schema <- runtime <- tools")
            elif mine not in SHARED and other not in SHARED:
                if target != other:
                    lines.append(f"{name} imports {target}, a module inside another tool")
                    continue
                names, _ = public_names(modules[other])
                for taken in sorted(module.names_from.get(target, set()) - set(names or [])):
                    lines.append(f"{name} imports {taken} from {other}, not in its __all__")
        for text in sorted(module.strings):
            if text in modules and _owner(text) not in (mine, *SHARED) and text != _owner(text):
                lines.append(f"{name} names {text}, a module of another tool")
    heavy = torch_at_import(modules)
    for name in sorted(heavy):
        if name.startswith(tuple(f"{side}." for side in TORCH_FREE)):
            lines.append(f"{name} imports torch at module level ({' -> '.join(heavy[name])}): its side, "
                         f"{name.rpartition('.')[0]}, runs in the tool's own process, which stays torch-free")
    return lines, found_circles


def test_no_new_offences_and_no_stale_allowances():
    lines, _ = offences(load())
    new = [line for line in lines if line not in ALLOWED]
    stale = sorted(ALLOWED - set(lines))
    assert not new, "import graph:\n" + "\n".join(new)
    assert not stale, "fixed, so take them out of ALLOWED in tests/test_import_graph.py:\n" + "\n".join(stale)


def test_the_reader_sees_what_it_must(tmp_path):
    """The checks find a planted circle (inside a function; in capture's boot, by top-level names and
    through pt2kit_portable), a reach into another tool's module, a name outside __all__, an __all__ name that
    resolves nowhere and torch on a torch-free side (directly, through a worker module, through a module of
    another side): the test above cannot pass by seeing nothing."""
    modules = load()

    def plant(name: str, source: str, is_package: bool = False) -> None:
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        modules[name] = _read(name, path, is_package)

    plant("pt2kit.kdiff.planted_a", "def f():\n    from .planted_b import g\n")
    plant("pt2kit.kdiff.planted_b", "from pt2kit.kdiff.planted_a import f\ng = 1\n")
    plant("pt2kit.fxcheck.planted", "from pt2kit.kdiff.localize import localize\nfrom pt2kit.kdiff import metrics_x\n")
    plant("pt2kit.runtime.planted", "import pt2kit.kdiff\n")
    plant("pt2kit.kdiff.planted_lib", "def there():\n    pass\n")
    # capture's boot: its modules import each other (and pt2kit_portable) by top-level name
    boot = "pt2kit.capture.boot.pt2kit_capture_"
    plant(f"{boot}planted_a", "import pt2kit_portable\n\ndef f():\n    import pt2kit_capture_planted_b\n")
    plant(f"{boot}planted_b", "from pt2kit_capture_planted_a import f\n")
    plant("pt2kit.capture.boot.pt2kit_portable_user", "from pt2kit_portable import is_leaf\n")
    plant("pt2kit_portable", "import pt2kit.capture.boot.pt2kit_portable_user\n")
    # a torch-free side: torch at module level, directly or through a worker module; inside a function it may
    plant("pt2kit.runtime.parent.planted_a", "import torch.fx\n")
    plant("pt2kit.runtime.common.planted_b", "from pt2kit.runtime.worker import hops\n")
    plant("pt2kit.minify.parent.planted_c", "from ..judge.planted_d import f\n")
    plant("pt2kit.minify.judge.planted_d", "import torch\n\ndef f():\n    pass\n")
    plant("pt2kit.runtime.parent.planted_e", "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import torch\n\n"
                                             "class C:\n    def f(self):\n        import torch\n")
    plant("pt2kit.kdiff", '_PUBLIC = {"there": ".planted_lib", "gone": ".planted_lib:nowhere"}\n'
                          '__all__ = ["__version__", *_PUBLIC]\n__version__ = "0"\n', True)
    lines, _ = offences(modules)
    assert "circle: pt2kit.kdiff.planted_a <-> pt2kit.kdiff.planted_b" in lines
    assert f"circle: {boot}planted_a <-> {boot}planted_b" in lines
    assert "circle: pt2kit.capture.boot.pt2kit_portable_user <-> pt2kit_portable" in lines
    assert "pt2kit.fxcheck.planted imports pt2kit.kdiff.localize, a module inside another tool" in lines
    assert "pt2kit.fxcheck.planted imports metrics_x from pt2kit.kdiff, not in its __all__" in lines
    assert "pt2kit.runtime.planted imports pt2kit.kdiff: the layers go schema <- runtime <- tools" in lines
    assert ("pt2kit_portable imports pt2kit.capture.boot.pt2kit_portable_user: the portable layer needs the "
            "standard library and torch alone") in lines
    assert "pt2kit.kdiff.__all__ names gone, but .planted_lib:nowhere does not define it" in lines
    side = "runs in the tool's own process, which stays torch-free"
    assert (f"pt2kit.runtime.parent.planted_a imports torch at module level (pt2kit.runtime.parent.planted_a -> "
            f"torch): its side, pt2kit.runtime.parent, {side}") in lines
    assert (f"pt2kit.runtime.common.planted_b imports torch at module level (pt2kit.runtime.common.planted_b -> "
            f"pt2kit.runtime.worker.hops -> torch): its side, pt2kit.runtime.common, {side}") in lines
    assert (f"pt2kit.minify.parent.planted_c imports torch at module level (pt2kit.minify.parent.planted_c -> "
            f"pt2kit.minify.judge.planted_d -> torch): its side, pt2kit.minify.parent, {side}") in lines
    assert not any(line.startswith(("pt2kit.runtime.parent.planted_e ", "pt2kit.minify.judge.planted_d "))
                   for line in lines)
    assert not any("names there" in line for line in lines)


if __name__ == "__main__":  # the lint session: counts on stdout, exit 1 on a new offence or a stale allowance
    all_lines, all_circles = offences(load())
    print(f"import graph: {len(all_circles)} circle(s), {len(all_lines)} offence(s), "
          f"{len(set(all_lines) & ALLOWED)} of them allowed for now (ALLOWED in {Path(__file__).name})")
    for line in all_lines:
        print(("  allowed: " if line in ALLOWED else "  NEW: ") + line)
    for line in sorted(ALLOWED - set(all_lines)):
        print("  STALE (fixed: remove from ALLOWED): " + line)
    sys.exit(1 if set(all_lines) ^ ALLOWED else 0)
